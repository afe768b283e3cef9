# tend's container image: Node 24 runs the TypeScript sources directly (native type stripping, no build step).
FROM node:24-bookworm-slim

ENV NODE_ENV=production
WORKDIR /app

# Production dependencies only. Install scripts are skipped: none of them is needed here.
#  - @temporalio/core-bridge has no install script; its prebuilt native binaries ship inside
#    the npm package (releases/x86_64-unknown-linux-gnu, releases/aarch64-unknown-linux-gnu).
#  - @swc/core's postinstall only checks that its platform package (@swc/core-linux-*-gnu,
#    an optional dependency that npm installs anyway) loads, and falls back to wasm if not.
#  - protobufjs's postinstall only prints a version-scheme warning.
#  - the devDependency `node` (Node 24 for older hosts) is omitted: this image has Node 24.
# `npm install --no-save` installs exactly the locked versions and writes nothing back. It stands
# in for `npm ci` while package-lock.json lacks entries for @swc/core's optional platform packages
# other than linux x64/arm64 (npm ci refuses such a lock as "out of sync"); once the lock lists
# them all, `npm ci --omit=dev --ignore-scripts` is the command to use here.
COPY package.json package-lock.json ./
RUN npm install --omit=dev --ignore-scripts --no-save --no-audit --no-fund \
 && npm cache clean --force

COPY src/ src/
COPY deploy/ deploy/
COPY bin/ bin/

# The node image's unprivileged user (uid 1000, gid 1000); Kubernetes manifests use these numbers.
USER node

ENTRYPOINT ["node", "/app/src/starters/cli.ts"]
CMD ["run", "--config", "/etc/tend/config.yaml"]
