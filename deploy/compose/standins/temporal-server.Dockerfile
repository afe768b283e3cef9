# Temporal's server for docker-compose.yml where temporalio/server cannot be pulled: the same
# version's binary (scripts/binaries.sh --cluster) and the same entry point (docker/scripts/sh in
# its Go module), on the local base; configured from the environment by the template the server
# embeds, as the official image is.
ARG BASE
FROM ${BASE}
COPY temporal-server /usr/local/bin/temporal-server
COPY entrypoint.sh /etc/temporal/entrypoint.sh
WORKDIR /etc/temporal
USER 1000:1000
# bash: the script sets pipefail, which Debian's sh (dash) lacks.
CMD ["/bin/bash", "/etc/temporal/entrypoint.sh"]
