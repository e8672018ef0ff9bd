# gpu-tracker daemon in a container. docs/daemon.md, "Docker", shows how to run it.
#
#   docker build -t gpu-tracker .
#   docker run -d --name gpu-tracker --stop-timeout 30 --env-file gpu-tracker.env \
#       -v "$PWD/data:/data" gpu-tracker
#
# /data holds config.toml and the price store (storage.path relative to the config lands
# there). Credentials come from the environment (--env-file), never from the image.
FROM python:3.12-slim

ENV PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

# The package only (no dev dependencies); the sources are not kept in the image.
WORKDIR /src
COPY pyproject.toml README.md ./
COPY tracker ./tracker
COPY collectors ./collectors
COPY storage ./storage
COPY alerts ./alerts
RUN pip install . && cd / && rm -rf /src

# A fixed uid, so a bind-mounted data directory can be handed over: chown 10001 data
RUN useradd --system --uid 10001 --user-group --home-dir /data --shell /usr/sbin/nologin \
        gpu-tracker \
    && mkdir /data && chown gpu-tracker:gpu-tracker /data
# The shipped config as a starting point: a new named volume is filled with it.
COPY --chown=gpu-tracker:gpu-tracker config.toml /data/config.toml

USER gpu-tracker
WORKDIR /data
VOLUME ["/data"]

# Used only when config.toml says [metrics] listen = "0.0.0.0:9108": inside a container,
# loopback is not reachable from the host. Publish it on the host's loopback:
# -p 127.0.0.1:9108:9108
EXPOSE 9108

# The daemon finishes or abandons running collections within daemon.shutdown_grace (10 s by
# default) after SIGTERM: stop with `docker stop -t 30` (or --stop-timeout 30 on run) so
# Docker does not kill it at its own 10 s default.
STOPSIGNAL SIGTERM
ENTRYPOINT ["gpu-tracker", "--config", "/data/config.toml"]
CMD ["daemon"]
