# Temporal's admin tools for docker-compose.yml where temporalio/admin-tools cannot be pulled:
# temporal-sql-tool and its PostgreSQL schema files of the server's version, and the temporal CLI
# (scripts/binaries.sh), where the official image has them, on the local base.
ARG BASE
FROM ${BASE}
COPY temporal-sql-tool temporal /usr/local/bin/
COPY schema/ /etc/temporal/schema/
USER 1000:1000
