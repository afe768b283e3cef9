# Temporal's Web UI for docker-compose.yml where temporalio/ui cannot be pulled: the UI server of
# the same version (scripts/binaries.sh --cluster), its configuration template config/docker.yaml
# from its Go module, started as the official image starts it, on the local base.
ARG BASE
FROM ${BASE}
WORKDIR /home/ui-server
COPY temporal-ui-server ./ui-server
COPY docker.yaml ./config/docker.yaml
USER 1000:1000
EXPOSE 8080
ENTRYPOINT ["./ui-server", "--env", "docker", "start"]
