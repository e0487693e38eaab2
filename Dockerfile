# driftline service image: consumer, exporter (:9108), trigger evaluation, scheduled jobs and the simulator.
#   docker build -t driftline:local .
FROM python:3.11-slim

# MALLOC_ARENA_MAX=2: the exporter answers each scrape on its own thread, and glibc's per-thread malloc arenas
# fragmented `driftline run` to 575 MB steady and 740 MB after a weekly report; with 2 arenas 405-415 MB
# (README, Capacity planning: Memory). driftline caps them itself at start-up (malloc_arenas.py); the variable
# keeps the cap for anything else the image runs.
ENV MALLOC_ARENA_MAX=2 \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

WORKDIR /src
COPY pyproject.toml README.md ./
COPY src ./src
RUN pip install . \
    && rm -rf /src \
    && useradd --system --uid 10001 --user-group --create-home --home-dir /home/driftline driftline

USER driftline
WORKDIR /home/driftline

EXPOSE 9108

# /healthz is served by the exporter; python is used because the slim image has no curl or wget.
HEALTHCHECK --interval=15s --timeout=5s --start-period=30s --retries=3 \
    CMD ["python", "-c", "import urllib.request; urllib.request.urlopen('http://127.0.0.1:9108/healthz', timeout=4)"]

# The exporter listens on loopback unless told otherwise; in a container it must bind all interfaces.
CMD ["driftline", "run", "--host", "0.0.0.0", "--port", "9108"]
