# tend's container image: Node 24 runs the TypeScript sources directly (native type stripping, no
# build step), so the image is the sources, the production dependencies and Node.
#
# The base image is pinned by tag and digest: the Docker Official Image node:24.11.1-bookworm-slim at
# the digest public Dockerfiles pin for that tag (also with --platform=linux/amd64); it was not read
# from the registry itself here. Check it, or move to a newer Node by replacing both, with the digest
# the registry reports for the tag:
#   docker buildx imagetools inspect node:24.X.Y-bookworm-slim --format '{{json .Manifest.Digest}}'
# (or `crane digest node:24.X.Y-bookworm-slim`). docs/deploy.md says how to check the image.
ARG NODE_IMAGE=node:24.11.1-bookworm-slim@sha256:48abc13a19400ca3985071e287bd405a1d99306770eb81d61202fb6b65cf0b57

# ---------------------------------------------------------------------------------------------
# deps: exactly the locked production dependencies.
# ---------------------------------------------------------------------------------------------
FROM ${NODE_IMAGE} AS deps
WORKDIR /app
# `npm ci` installs what package-lock.json says or refuses. Install scripts are skipped; none is
# needed here:
#  - @temporalio/core-bridge has no install script; its prebuilt native binaries ship inside the
#    package (releases/x86_64-unknown-linux-gnu, releases/aarch64-unknown-linux-gnu).
#  - @swc/core's postinstall only checks that its platform package (@swc/core-linux-*-gnu, an
#    optional dependency npm installs for the build platform) loads, and falls back to wasm if not.
#  - protobufjs's postinstall only prints a version-scheme warning.
# --omit=dev leaves out the devDependency `node` (Node 24 for older hosts): this image has Node 24.
COPY package.json package-lock.json ./
# (npm's cache stays in this stage, which the image does not keep.) Behind a proxy that re-signs
# TLS, give its CA bundle as the build secret `ca` (`--secret id=ca,src=<file>`; `npm run image`
# passes the file NODE_EXTRA_CA_CERTS names); without it, Node's own roots.
RUN --mount=type=secret,id=ca,required=false \
    if [ -f /run/secrets/ca ]; then export NODE_EXTRA_CA_CERTS=/run/secrets/ca; fi \
 && npm ci --omit=dev --ignore-scripts --no-audit --no-fund
# What tend never loads leaves the image:
#  - the Temporal core bridge ships its native library for five platforms (about 28 MB each);
#    only this platform's is kept, and the build fails if it is missing.
#  - type declarations, TypeScript sources, source maps and Markdown: Node loads none of them
#    from node_modules.
#  - bare-*: modules for the Bare runtime, which tar-fs, tar-stream and events-universal load only
#    under Bare's `bare` import condition (Node loads fs, path and events instead).
RUN case "$(uname -m)" in \
      x86_64) keep=x86_64-unknown-linux-gnu ;; \
      aarch64) keep=aarch64-unknown-linux-gnu ;; \
      *) echo "the Temporal core bridge has no native library for $(uname -m)" >&2; exit 1 ;; \
    esac \
 && releases=node_modules/@temporalio/core-bridge/releases \
 && test -f "$releases/$keep/index.node" \
 && find "$releases" -mindepth 1 -maxdepth 1 ! -name "$keep" -exec rm -rf {} + \
 && find node_modules -type f \( -name '*.ts' -o -name '*.mts' -o -name '*.cts' -o -name '*.map' -o -iname '*.md' \) -delete \
 && rm -rf node_modules/bare-*

# ---------------------------------------------------------------------------------------------
# system: the base image without what only installs packages or builds native addons (npm,
# corepack, yarn, Node's C headers: about 90 MB of the official image), copied whole into the
# runtime stage below so that the removed files take no room in a lower layer.
# ---------------------------------------------------------------------------------------------
FROM ${NODE_IMAGE} AS system
RUN rm -rf /usr/local/lib/node_modules /usr/local/include /usr/local/share/doc /usr/local/share/man \
      /usr/local/bin/npm /usr/local/bin/npx /usr/local/bin/corepack /usr/local/bin/yarn /usr/local/bin/yarnpkg /opt/yarn-v* \
 && node --version

# ---------------------------------------------------------------------------------------------
# runtime: only what tend runs. Everything is owned by root and read-only to tend's user.
# ---------------------------------------------------------------------------------------------
FROM scratch AS runtime
ARG NODE_IMAGE
COPY --from=system / /
LABEL org.opencontainers.image.base.name=${NODE_IMAGE}
ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin NODE_ENV=production
WORKDIR /app
COPY --from=deps /app/node_modules/ node_modules/
COPY package.json package-lock.json ./
COPY bin/ bin/
COPY src/ src/
# The workflow code, bundled once here (webpack and swc) to dist/workflow-bundle.js with the
# fingerprint of the sources it was built from: the worker loads it instead of bundling at every
# start, so it starts faster and writes nothing to /tmp (the root filesystem can be read-only).
# The same as `npm run bundle`, whose script the build context leaves out.
RUN node --input-type=module -e "const { writeWorkflowBundle } = await import('/app/src/workers/worker.ts'); const r = await writeWorkflowBundle(); console.log('wrote', r.path, r.bytes, 'bytes');" \
 && rm -rf /tmp/* /root/.cache

# The commit the image is built from (`npm run image` passes `git rev-parse HEAD`), which
# `tend --version` prints; no file when the build is given none.
ARG TEND_COMMIT=
RUN case "$TEND_COMMIT" in \
      "") ;; \
      *[!0-9a-f]*) echo "TEND_COMMIT is not a commit id" >&2; exit 1 ;; \
      *) printf '%s\n' "$TEND_COMMIT" > /app/COMMIT ;; \
    esac

# The node image's unprivileged user `node` (uid 1000, gid 1000), by number so that Kubernetes can
# check runAsNonRoot; deploy/kubernetes/deployment.yaml uses the same numbers.
USER 1000:1000

# bin/tend finds no scripts/setup.mjs and no node_modules/.bin/node here, so it runs the CLI with
# the image's own node, as PID 1 (exec): SIGTERM reaches tend's shutdown.
ENTRYPOINT ["/app/bin/tend"]
CMD ["run", "--config", "/etc/tend/config.yaml"]
