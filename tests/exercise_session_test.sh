#!/usr/bin/env bash
# A learner's session through the real runner: amp-lab exercise, check (a failing check with its
# hint), watch (a save that fixes the file ends it with the passing verdict; Ctrl-C stops it cleanly),
# --solution and progress recorded, and bad input refused in one line with exit 2.
#   exercise_session_test.sh AMP_LAB SOURCE_DIR
# Its own workspace and progress file; the exercise's learner build is shared, so ctest runs it alone.
set -uo pipefail
amp_lab=$1
source_dir=$2
mutate=$3  # amp_lab_mutate: a kept mistake of tests/exercises/NN.yaml as a learner's file
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
export XDG_STATE_HOME=$scratch/state NO_COLOR=1
ws=$scratch/ws
file=$ws/09_gradient_accumulation.cpp
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
expect() {  # expect CODE WANTED_CODE TEXT PATTERN: exit code and a line of TEXT matching PATTERN
  [[ $1 -eq $2 ]] || fail "exit code $1, wanted $2 (${4})"
  grep -qE -- "$4" <<<"$3" || { fail "no line matching '$4' in:"; echo "$3"; }
}

out=$("$amp_lab" exercise 09 --dir "$ws" 2>&1); expect $? 0 "$out" "your file: $file"
cmp -s "$file" "$source_dir/labs/09_gradient_accumulation/exercise.cpp" || fail "the starter was not copied"

# The starter: it builds, the lab's checks fail, the hint for weights that never moved.
out=$("$amp_lab" check 09 --dir "$ws" 2>&1); expect $? 1 "$out" "^  FAIL  accumulated-equals-whole-fp32"
expect 1 1 "$out" "hint: the weights did not move"
expect 1 1 "$out" "^not yet: your code: 0 of 5 checks hold"
expect 1 1 "$out" "^  the lab's own runs, context that does not judge your code:"
expect 1 1 "$out" "update-each-not-the-scale"
grep -q "^  PASS" <<<"$out" && fail "the starter's verdict marks a check PASS: $out"
grep -q "scaler.scale(loss).backward();" <<<"$out" && fail "the starter's verdict shows the code: $out"

# hint: the next step for the mistake the last check measured, the API and then the code, each recorded.
out=$("$amp_lab" hint 09 --dir "$ws" 2>&1); expect $? 0 "$out" "^exercise 09, check accumulated-equals-whole-fp32 \(no-update-applied\), step 2 of 3: the API to use"
out=$("$amp_lab" hint 09 --dir "$ws" 2>&1); expect $? 0 "$out" "^    scaler.scale\(loss\).backward\(\);"
# The starter shows several hints: the steps of each follow, one a call, until every one is shown.
for _ in 1 2 3 4 5 6 7 8 9; do
  out=$("$amp_lab" hint 09 --dir "$ws" 2>&1); code=$?
  grep -q "every step of the hints" <<<"$out" && break
done
expect $code 0 "$out" "every step of the hints for your last check of exercise 09 has been shown"
grep -q '"no-update-applied": 3' "$XDG_STATE_HOME/amp-lab/progress.json" || fail "the hint steps shown were not recorded"

# A known mistake: update() per micro-batch, named by its hint.
"$mutate" 09 update-per-micro-batch >"$file"
out=$(COLUMNS=110 "$amp_lab" check 09 --dir "$ws" 2>&1); expect $? 1 "$out" "hint: the optimizer stepped inside the effective batch"
# README.md quotes this check at 110 columns: each part of its excerpt (between "..." lines) is in this
# verdict, in order, word for word (numbers masked: they differ from machine to machine; the file by name).
printf '%s\n' "$out" >"$scratch/verdict.txt"
python3 - "$source_dir/README.md" "$scratch/verdict.txt" <<'PY' || fail "README.md's check excerpt is not what check prints"
import re, sys
readme = open(sys.argv[1], encoding="utf-8").read()
block = re.search(r"<!-- check excerpt.*?```\n(.*?)```", readme, re.S).group(1)
def words(text):
    return [re.sub(r"\d+", "#", w.rsplit("/", 1)[-1]) for w in text.split()]
got, at = words(open(sys.argv[2], encoding="utf-8").read()), 0
for part in re.split(r"\n *\.\.\.\n", "\n".join(l for l in block.splitlines() if not l.startswith("$ "))):
    want = words(part)
    found = next((i for i in range(at, len(got) - len(want) + 1) if got[i:i + len(want)] == want), None)
    if found is None:
        sys.exit(f"not in the verdict, in order:\n{part}")
    at = found + len(want)
PY

# A compile error: the compiler's message, naming the learner's file and line first.
"$mutate" 09 loss-not-divided | sed 's/opt.zero_grad();/opt.zero_grad()/' >"$file"
out=$("$amp_lab" check 09 --dir "$ws" 2>&1); expect $? 1 "$out" "^$file:[0-9]+:[0-9]+: error"
expect 1 1 "$out" "^does not build: $file"

# watch: Ctrl-C while it waits for a save stops it with 130, cleanly.
"$amp_lab" watch 09 --dir "$ws" </dev/null >"$scratch/watch1.out" 2>&1 &
pid=$!
for _ in $(seq 1 240); do grep -q "^watching" "$scratch/watch1.out" && break; sleep 0.5; done
kill -INT $pid
wait $pid
expect $? 130 "$(cat "$scratch/watch1.out")" "^stopped; your file is $file"

# watch: a save that fixes the file ends it with the passing verdict, exit 0.
"$amp_lab" watch 09 --dir "$ws" </dev/null >"$scratch/watch2.out" 2>&1 &
pid=$!
for _ in $(seq 1 240); do grep -q "^watching" "$scratch/watch2.out" && break; sleep 0.5; done
"$amp_lab" exercise 09 --solution >"$file"  # the lab's own amp.cpp
for _ in $(seq 1 240); do kill -0 $pid 2>/dev/null || break; sleep 0.5; done
kill $pid 2>/dev/null
wait $pid
expect $? 0 "$(cat "$scratch/watch2.out")" "^exercise 09 done: all 5 checks hold for your code"

out=$("$amp_lab" exercise 09 --solution 2>&1); expect $? 0 "$out" "scaler.scale\(loss\).backward\(\)"
out=$("$amp_lab" progress 2>&1); expect $? 0 "$out" "09: done.*solution seen"
out=$("$amp_lab" exercises 2>&1); expect $? 0 "$out" "^09 .* done"

for bad in "check 99" "check" "watch 09 --bogus" "exercise nine" "check 02 --dir $scratch/none" "hint" "hint 99"; do
  out=$("$amp_lab" $bad 2>&1); code=$?
  [[ $code -eq 2 && $(wc -l <<<"$out") -eq 1 ]] || fail "amp-lab $bad: exit $code, output: $out"
done

((failures == 0)) && echo "the session held" || exit 1
