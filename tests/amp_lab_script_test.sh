#!/usr/bin/env bash
# scripts/amp-lab stopped in each phase, on a made-up build folder: a fake `cmake` (on PATH) whose builds
# last until stopped and start a stand-in for ninja in their process group, and a fake bin/amp-lab.
#   Ctrl-C during the runner's build and during the first lab's build: exit 130, a new line on stderr,
#     no build-ahead.<pid>/ left, no ninja left;
#   the background builder's shell killed by SIGKILL: its ninja still ends with the walk.
#   amp_lab_script_test.sh SCRIPTS_AMP_LAB
set -uo pipefail
set -m  # each background job its own process group, as a terminal runs the script; env --default-signal
# below: SIGINT not ignored even when this test was started with it ignored (a background job)
script=$1
scratch=$(mktemp -d)
# The stand-in ninjas write their pids here: counted, and stopped at the end should any be left.
pids=$scratch/ninja.pids
trap 'for p in $(cat "$pids" 2>/dev/null); do kill -KILL "$p" 2>/dev/null; done; rm -rf "$scratch"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
ninjas() {
  local n=0 p
  for p in $(cat "$pids" 2>/dev/null); do kill -0 "$p" 2>/dev/null && n=$((n + 1)); done
  echo $n
}

build=$scratch/build
mkdir -p "$build/bin" "$scratch/path"
touch "$build/build.ninja"
# cmake --build BUILD -j N --target T...: "builds" the targets named in $scratch/slow by starting a ninja
# that never ends, and waits for it; other targets are built at once.
cat >"$scratch/path/cmake" <<EOF
#!/usr/bin/env bash
for t in "\$@"; do
  if grep -qx -- "\$t" "$scratch/slow" 2>/dev/null; then
    sleep 300 &
    echo \$! >>"$pids"
    echo started >"$scratch/started.\$t"
    wait
  fi
done
exit 0
EOF
# bin/amp-lab: plan lists two labs; quiz is the walk, which lasts until $scratch/walk-ends appears.
cat >"$build/bin/amp-lab" <<EOF
#!/usr/bin/env bash
if [[ \$1 == plan ]]; then echo lab01_first; echo lab02_second; exit 0; fi
for _ in \$(seq 300); do [[ -e "$scratch/walk-ends" ]] && exit 0; sleep 0.1; done
exit 0
EOF
chmod +x "$scratch/path/cmake" "$build/bin/amp-lab"

# Waits at most 10 s for process $1 to end; a script that does not end fails the test and is killed.
ended() {
  for _ in $(seq 100); do kill -0 "$1" 2>/dev/null || return 0; sleep 0.1; done
  fail "the script (pid $1) did not end within 10 s"
  kill -KILL -- "-$1" 2>/dev/null
}

for target in amp-lab lab01_first; do
  echo "$target" >"$scratch/slow"
  rm -f "$scratch"/started.* "$scratch/err"
  env --default-signal=INT AMP_LAB_BUILD_DIR="$build" PATH="$scratch/path:$PATH" "$script" quiz </dev/null >/dev/null 2>"$scratch/err" &
  pid=$!
  for _ in $(seq 200); do [[ -e $scratch/started.$target ]] && break; sleep 0.05; done
  [[ -e $scratch/started.$target ]] || fail "the build of $target never started"
  kill -INT -- -$pid  # Ctrl-C: the terminal signals the foreground process group
  ended $pid
  wait $pid
  code=$?
  [[ $code -eq 130 ]] || fail "Ctrl-C during the build of $target: exit $code, wanted 130"
  [[ $(tail -c 1 "$scratch/err" | od -An -c | tr -d ' ') == '\n' ]] || fail "Ctrl-C during $target: stderr does not end on a new line"
  [[ ! -e $build/build-ahead.$pid ]] || fail "Ctrl-C during $target left $build/build-ahead.$pid behind"
  sleep 0.2
  [[ $(ninjas) -eq 0 ]] || fail "Ctrl-C during $target left $(ninjas) ninja process(es) running"
done

# The background builder's shell killed outright; its ninja must still end when the walk does.
echo lab02_second >"$scratch/slow"
rm -f "$scratch"/started.* "$scratch/walk-ends"
env --default-signal=INT AMP_LAB_BUILD_DIR="$build" PATH="$scratch/path:$PATH" "$script" quiz </dev/null >/dev/null 2>"$scratch/err" &
pid=$!
for _ in $(seq 200); do [[ -e $scratch/started.lab02_second ]] && break; sleep 0.05; done
builder=$(cat "$build/build-ahead.$pid/builder.pid" 2>/dev/null)
[[ -n $builder && $builder != 0 ]] || fail "no background builder started"
kill -KILL "$builder" 2>/dev/null
touch "$scratch/walk-ends"
ended $pid
wait $pid
code=$?
[[ $code -eq 0 ]] || fail "the walk after the builder's SIGKILL: exit $code, wanted 0"
sleep 0.2
[[ $(ninjas) -eq 0 ]] || fail "the builder's ninja outlived the walk ($(ninjas) running)"
[[ ! -e $build/build-ahead.$pid ]] || fail "build-ahead.$pid left behind after the walk"

if ((failures)); then
  echo "$failures failure(s)"
  exit 1
fi
echo "scripts/amp-lab: Ctrl-C in each build phase exits 130 on a new line with nothing left; the builder's ninja ends with the walk"
