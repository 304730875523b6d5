#!/usr/bin/env bash
# The judge cannot be fooled, through the real runner on exercise 09: a fake report printed by the
# learner's code, a debug print in a correct solution, an endless loop (the deadline), SIGTERM during a
# run (nothing left running), two checks of one exercise at once (each its own right verdict), a save that
# leaves the file missing for a moment (watch waits), and a bad exercise entry in progress.json.
#   exercise_judge_test.sh AMP_LAB SOURCE_DIR BUILD_DIR
# Its own workspace and progress file; the exercise's learner build is shared, so ctest runs it alone.
set -uo pipefail
amp_lab=$1
source_dir=$2
build_dir=$3
mutate=$4  # amp_lab_mutate: a kept mistake of tests/exercises/NN.yaml as a learner's file
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
export XDG_STATE_HOME=$scratch/state NO_COLOR=1
ws=$scratch/ws
mkdir -p "$ws"
file=$ws/09_gradient_accumulation.cpp
learner=$build_dir/exercises/bin/exercise09_learner
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
expect() {  # expect CODE WANTED_CODE TEXT PATTERN: exit code and a line of TEXT matching PATTERN
  [[ $1 -eq $2 ]] || fail "exit code $1, wanted $2 (${4})"
  grep -qE -- "$4" <<<"$3" || { fail "no line matching '$4' in:"; echo "$3"; }
}
solution=$scratch/solution.cpp
"$amp_lab" exercise 09 --solution >"$solution"
# The solution with TEXT put before the line holding `opt.zero_grad();` (the step's first line), and
# INCLUDE's header added: `with INCLUDE TEXT >FILE`.
with() { sed "s|^\(#include \"amp.h\"\)|\1\n#include <$1>|; s|^\(  opt.zero_grad();.*\)|  $2\n\1|" "$solution"; }

# A fake PASS printed from a static constructor, then _exit(0): the lab never wrote its report.
{ cat "$solution"; printf '%s\n' '#include <unistd.h>' '#include <cstdio>' \
  'namespace { const int fake = [] { std::printf("{\"passed\": true, \"checks\": []}\n"); std::fflush(stdout); _exit(0); return 0; }(); }'; } >"$file"
out=$("$amp_lab" check 09 --dir "$ws" 2>&1); expect $? 1 "$out" "the lab stopped: the program ended \(exit code 0\) before the lab wrote its report"
expect 1 1 "$out" '^  \| \{"passed": true, "checks": \[\]\}'
grep -q "exercise 09 done" <<<"$out" && fail "a fake report passed"

# A debug line in a correct solution: the verdict stands, the line is shown apart.
with iostream 'std::cout << "debug: accumulating" << std::endl;' >"$file"
out=$("$amp_lab" check 09 --dir "$ws" 2>&1); expect $? 0 "$out" "^exercise 09 done: all [0-9]+ checks hold"
expect 0 0 "$out" "^your program printed \([0-9]+ lines?\):"
expect 0 0 "$out" "^  \| debug: accumulating"

# An endless loop: killed at the deadline, said so.
with atomic 'for (std::atomic<bool> spin{true}; spin;) {}' >"$file"
start=$SECONDS
out=$(AMP_LAB_CHECK_DEADLINE=3 "$amp_lab" check 09 --dir "$ws" 2>&1); expect $? 1 "$out" "your code did not finish within 3 s"
((SECONDS - start < 120)) || fail "the endless loop took $((SECONDS - start)) s to judge"
pgrep -f "$learner" >/dev/null && fail "the endless loop is still running after its verdict"

# SIGTERM while the learner's program runs: check ends by it, and the program with it.
"$amp_lab" check 09 --dir "$ws" >"$scratch/term.out" 2>&1 &
pid=$!
for _ in $(seq 1 240); do pgrep -f "$learner" >/dev/null && break; sleep 0.5; done
pgrep -f "$learner" >/dev/null || fail "the learner's program never started"
kill -TERM $pid
wait $pid
code=$?
[[ $code -eq 143 ]] || fail "check after SIGTERM: exit $code, wanted 143"
for _ in $(seq 1 20); do pgrep -f "$learner" >/dev/null || break; sleep 0.5; done
pgrep -f "$learner" >/dev/null && { fail "the learner's program outlived check's SIGTERM"; pkill -KILL -f "$learner"; }

# Two checks of one exercise at once, a right and a wrong file: each gets its own verdict.
mkdir -p "$ws/a" "$ws/b"
cp "$solution" "$ws/a/09_gradient_accumulation.cpp"
"$mutate" 09 loss-not-divided >"$ws/b/09_gradient_accumulation.cpp"
"$amp_lab" check 09 --dir "$ws/a" >"$scratch/a.out" 2>&1 &
pa=$!
"$amp_lab" check 09 --dir "$ws/b" >"$scratch/b.out" 2>&1 &
pb=$!
wait $pa; ca=$?
wait $pb; cb=$?
expect $ca 0 "$(cat "$scratch/a.out")" "^exercise 09 done: all [0-9]+ checks hold"
expect $cb 1 "$(cat "$scratch/b.out")" "hint: the update is 4x the whole batch's"
grep -q "another check of exercise 09 is running: waiting for it" "$scratch/a.out" "$scratch/b.out" ||
  fail "neither check waited for the other"

# watch: a save that leaves no file for a moment (write aside, rename over) is waited through.
"$mutate" 09 loss-not-divided >"$file"
"$amp_lab" watch 09 --dir "$ws" </dev/null >"$scratch/watch.out" 2>&1 &
pid=$!
for _ in $(seq 1 240); do grep -q "^watching" "$scratch/watch.out" && break; sleep 0.5; done
mv "$file" "$file~"
sleep 3
cp "$solution" "$file.new" && mv "$file.new" "$file"
for _ in $(seq 1 240); do kill -0 $pid 2>/dev/null || break; sleep 0.5; done
kill $pid 2>/dev/null
wait $pid
expect $? 0 "$(cat "$scratch/watch.out")" "^exercise 09 done: all [0-9]+ checks hold"
expect 0 0 "$(cat "$scratch/watch.out")" "is gone: waiting for it to be saved again"

# An exercise entry of the wrong type in progress.json: set aside with one warning, the rest works.
mkdir -p "$XDG_STATE_HOME/amp-lab"
printf '%s\n' '{"version": 1, "quiz": {}, "exercises": {"09": {"status": 7}, "02": {"status": "started"}}}' \
  >"$XDG_STATE_HOME/amp-lab/progress.json"
out=$("$amp_lab" exercises 2>&1); expect $? 0 "$out" "^02 .* started"
[[ $(grep -c "warning" <<<"$out") -eq 1 ]] || fail "not one warning for the bad entry: $out"
expect 0 0 "$out" "the entry of exercise '09' \(status is not \"started\" or \"done\"\) is not one amp-lab writes"
out=$("$amp_lab" check 09 --dir "$ws" 2>&1); expect $? 0 "$out" "^exercise 09 done"
out=$("$amp_lab" exercises 2>&1); expect $? 0 "$out" "^09 .* done"
grep -q warning <<<"$out" && fail "the set-aside entry warned again after a save: $out"
grep -q '"exercises_set_aside"' "$XDG_STATE_HOME/amp-lab/progress.json" || fail "the bad entry was not kept aside"

((failures == 0)) && echo "the judge held" || exit 1
