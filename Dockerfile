# baton's image: the binary, git, Node.js with the agent CLIs baton is
# tested with (the pins of ./scripts/test), tini to pass SIGTERM on (a
# worker drains on it), and a user that is not root. For
# deploy/kubernetes: see docs/kubernetes.md.
#   docker build -t baton .
FROM rust:1.95-bookworm AS build
WORKDIR /src
COPY . .
RUN cargo build --release --locked -p baton-cli \
 && cp target/release/baton /usr/local/bin/baton

FROM node:20-bookworm-slim
RUN apt-get update \
 && apt-get install -y --no-install-recommends git ca-certificates openssh-client tini \
 && rm -rf /var/lib/apt/lists/*
# The same pins as ./scripts/test, where each CLI is tested.
ARG AGENT_CLIS="@anthropic-ai/claude-code@2.1.330 @openai/codex@0.169.0 @google/gemini-cli@0.61.0 @qwen-code/qwen-code@0.15.10 opencode-ai@1.18.33 @github/copilot@1.0.102 @factory/cli@0.225.1 @factory/cli-linux-x64@0.225.2"
RUN npm install -g --no-audit --no-fund --loglevel=error $AGENT_CLIS \
 && npm cache clean --force
COPY --from=build /usr/local/bin/baton /usr/local/bin/baton
COPY deploy/docker/baton-clone /usr/local/bin/baton-clone
RUN groupadd --gid 10001 baton \
 && useradd --uid 10001 --gid 10001 --home-dir /work/home --no-create-home --shell /usr/sbin/nologin baton
USER 10001:10001
WORKDIR /work
ENV BATON_PROJECT=/work/project
ENTRYPOINT ["/usr/bin/tini", "--", "/usr/local/bin/baton"]
CMD ["worker"]
