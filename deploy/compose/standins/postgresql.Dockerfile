# PostgreSQL for docker-compose.yml where postgres:16 cannot be pulled: Debian's own, on the local
# base. Debian 12 (bookworm) ships PostgreSQL 15, not 16; Temporal's postgres12 plugin and schema
# take both. Run as the official image runs: POSTGRES_USER, POSTGRES_PASSWORD, data in PGDATA.
ARG BASE
FROM ${BASE}
RUN apt-get update \
 && apt-get install -y --no-install-recommends postgresql-15 \
 && rm -rf /var/lib/apt/lists/* /var/cache/apt/*.bin
COPY postgresql-entrypoint.sh /usr/local/bin/postgresql-entrypoint.sh
ENV PATH=/usr/lib/postgresql/15/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin PGDATA=/var/lib/postgresql/data
EXPOSE 5432
ENTRYPOINT ["/usr/local/bin/postgresql-entrypoint.sh"]
