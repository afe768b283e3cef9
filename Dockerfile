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

# ---------------------------------------------------------------------------------------------
# bundle: the workflow code, bundled once (webpack and swc) to dist/workflow-bundle.js with the
# fingerprint of the sources it was built from: the worker loads it instead of bundling at every
# start, so it starts faster and writes nothing to /tmp (the root filesystem can be read-only).
# The same as `npm run bundle`, whose script the build context leaves out.
# ---------------------------------------------------------------------------------------------
FROM deps AS bundle
COPY bin/ bin/
COPY src/ src/
RUN node --input-type=module -e "const { writeWorkflowBundle } = await import('/app/src/workers/worker.ts'); const r = await writeWorkflowBundle(); console.log('wrote', r.path, r.bytes, 'bytes');"

# ---------------------------------------------------------------------------------------------
# pruned: the dependencies without what tend never loads in the image (scripts/image-prune.ts says
# what and why: other platforms' Temporal core bridge, the bundler's machinery, declarations).
# ---------------------------------------------------------------------------------------------
FROM deps AS pruned
COPY scripts/image-prune.ts scripts/image-prune.ts
RUN node scripts/image-prune.ts

# ---------------------------------------------------------------------------------------------
# system: the base image without what only installs packages, builds native addons or debugs:
# npm, corepack, yarn, Node's C headers and debugging symbols (strip, from Debian's binutils, which
# goes again), apt, dpkg and their perl. Copied whole into the runtime stage below, so that what
# is removed takes no room in a lower layer. An image built FROM tend's gets no package manager.
# ---------------------------------------------------------------------------------------------
FROM ${NODE_IMAGE} AS system
RUN apt-get update \
 && apt-get install -y --no-install-recommends binutils \
 && strip /usr/local/bin/node \
 && node --version \
 && apt-get purge -y --auto-remove binutils \
 && rm -rf /usr/local/lib/node_modules /usr/local/include /usr/local/share/doc /usr/local/share/man \
      /usr/local/bin/npm /usr/local/bin/npx /usr/local/bin/corepack /usr/local/bin/yarn /usr/local/bin/yarnpkg /opt/yarn-v* \
      /usr/bin/apt* /usr/lib/apt /usr/lib/*-linux-gnu/libapt-* /etc/apt /var/lib/apt /var/cache/apt /var/log/apt \
      /usr/bin/dpkg* /var/lib/dpkg /etc/dpkg /usr/share/dpkg /var/log/dpkg.log /usr/bin/perl* /usr/lib/*-linux-gnu/perl* \
      /usr/share/perl5 /usr/share/debconf /var/cache/debconf /usr/bin/debconf* /usr/lib/*-linux-gnu/gconv \
      /usr/share/doc /usr/share/man /usr/share/info /usr/share/locale /usr/share/lintian /var/log/*.log

# ---------------------------------------------------------------------------------------------
# runtime: only what tend runs. Everything is owned by root and read-only to tend's user.
# ---------------------------------------------------------------------------------------------
FROM scratch AS runtime
ARG NODE_IMAGE
COPY --from=system / /
LABEL org.opencontainers.image.base.name=${NODE_IMAGE}
ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin NODE_ENV=production
WORKDIR /app
COPY --from=pruned /app/node_modules/ node_modules/
COPY --from=bundle /app/dist/ dist/
COPY package.json package-lock.json ./
COPY bin/ bin/
COPY src/ src/

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
