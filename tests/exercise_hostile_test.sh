#!/usr/bin/env bash
# The judge against a learner's code that does what it should not, through the real runner on exercise 09:
# a bad AMP_LAB_CHECK_DEADLINE said before any build; code that looks on its command line for the report's
# path finds none, and a wrong file stays wrong; a reference cache rewritten
# between checks is not believed; a process the learner's code starts in a session of its own is gone when
# check ends; a work folder removed by the learner's code is made again, and a file saved with a UTF-8
# byte-order mark builds; watch stops at once when its output cannot be written, says nothing of a build
# its SIGTERM interrupted, and waits through its file becoming a symlink to /dev/zero or too large to read.
# Before those: a file amp-lab reads is never the file --json or a lab's --report-file writes, and a FIFO
# where the learner's file goes is said at once, and a quiz's {key} the lab does not report before its question.
#   exercise_hostile_test.sh AMP_LAB SOURCE_DIR BUILD_DIR
# Its own workspace and progress file; exercise 09's learner build is shared, so ctest runs it alone.
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
work=$build_dir/exercises/09_gradient_accumulation
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
expect() {  # expect CODE WANTED_CODE TEXT PATTERN: exit code and a line of TEXT matching PATTERN
  [[ $1 -eq $2 ]] || fail "exit code $1, wanted $2 (${4})"
  grep -qE -- "$4" <<<"$3" || { fail "no line matching '$4' in:"; echo "$3"; }
}
solution=$scratch/solution.cpp
"$amp_lab" exercise 09 --solution >"$solution"

# A file amp-lab reads named as the file a flag writes is refused in one line, exit 2, nothing written:
# exercises.yaml and glossary.yaml for --json, quiz.yaml while another quiz is walked, a lab's source for a
# lab's --report-file, and a flag taken for a file name. Each data file is compared with a copy, and put back
# if it changed, so that a runner without this check does not leave the clone broken.
for data in exercises.yaml glossary.yaml quiz.yaml; do cp "$source_dir/$data" "$scratch/$data.kept"; done
cp "$source_dir/quiz.yaml" "$scratch/other.yaml"
lab09_source=$source_dir/labs/09_gradient_accumulation/lab.cpp
cp "$lab09_source" "$scratch/lab.cpp.kept"
refused_walk() {  # refused_walk FLAG...: a walk whose --json is refused in one line, exit 2, before any lab
  local out
  out=$(cd "$scratch" && "$amp_lab" quiz --quick --device cpu --only 2 --file-order --answers a "$@" 2>&1)
  expect $? 2 "$out" "(which amp-lab reads; write the JSON elsewhere|--json needs a file name, got '--no-color')$"
  [[ $(wc -l <<<"$out") -eq 1 ]] || fail "--json refused in more than one line: $out"
}
refused_walk --json "$source_dir/exercises.yaml"
refused_walk --json "$source_dir/./glossary.yaml"
refused_walk --quiz "$scratch/other.yaml" --json "$source_dir/quiz.yaml"
refused_walk --json --no-color
[[ -e "$scratch/--no-color" ]] && fail "--json took the next flag for a file name"
out=$("$build_dir/bin/lab09_gradient_accumulation" --quick --report-file "$lab09_source" 2>&1)
expect $? 2 "$out" "--report-file: .* is a lab's source, which amp-lab reads"
for data in exercises.yaml glossary.yaml quiz.yaml; do
  cmp -s "$source_dir/$data" "$scratch/$data.kept" ||
    { fail "$data was written over"; cp "$scratch/$data.kept" "$source_dir/$data"; }
done
cmp -s "$lab09_source" "$scratch/lab.cpp.kept" ||
  { fail "lab 09's source was written over"; cp "$scratch/lab.cpp.kept" "$lab09_source"; }

# A quiz file of one's own whose explanation names a {key} the lab does not report: refused in one line, exit
# 2, when the lab's report comes back and before the question is asked (lab 09 --quick, about a second).
python3 - "$source_dir/quiz.yaml" "$scratch/unknown-key.yaml" <<'PY'
import sys
text = open(sys.argv[1]).read()
at = text.index("    explanation: >-\n", text.index("lab: gradient-accumulation")) + len("    explanation: >-\n")
open(sys.argv[2], "w").write(text[:at] + "      {no_such_key} " + text[at:].lstrip())
PY
out=$("$amp_lab" quiz --quiz "$scratch/unknown-key.yaml" --track all --only 9 --answers a --quick --device cpu \
  --file-order 2>&1)
expect $? 2 "$out" "question 9 \(.*\): \{no_such_key\} in its explanation is no observation lab gradient-accumulation reports"
grep -q "Your answer" <<<"$out" && fail "a question citing an unreported key was asked: $out"

# A FIFO where the learner's file is, in the workspace or given with --file: one line at once, exit 2, for
# check and watch alike (watch's reads would otherwise wait for a writer, saying nothing).
mkfifo "$scratch/fifo.cpp"
mkdir -p "$scratch/ws-fifo" && mkfifo "$scratch/ws-fifo/09_gradient_accumulation.cpp"
for command in watch check; do
  for where in --file "$scratch/fifo.cpp" --dir "$scratch/ws-fifo"; do
    [[ $where == --* ]] && { flag=$where; continue; }
    out=$(timeout 20 "$amp_lab" $command 09 "$flag" "$where" </dev/null 2>&1)
    expect $? 2 "$out" "is not a regular file"
  done
done

# A bad deadline is said at once, before the build (which would take 20 s or more), whatever its form.
{ cat "$solution"; echo "// not built: $$"; } >"$file"
for bad in abc 1e-9 ' 5' '5 ' 0 inf; do
  start=$SECONDS
  out=$(AMP_LAB_CHECK_DEADLINE=$bad "$amp_lab" check 09 --dir "$ws" 2>&1)
  expect $? 2 "$out" "AMP_LAB_CHECK_DEADLINE must be seconds from 1 to 86400, got '$bad'"
  ((SECONDS - start < 10)) || fail "AMP_LAB_CHECK_DEADLINE='$bad' was refused only after $((SECONDS - start)) s"
done
grep -q "not built: $$" "$work/learner.cpp" 2>/dev/null && fail "a bad deadline was refused after the build began"

# A wrong file whose code, before main, looks for the report's path on its command line and fills in a
# passing report with the keys of the reference cache beside it, then exits 0. The judge hands the lab no
# path: the code finds none, and the wrong file is judged wrong.
{ "$mutate" 09 loss-not-divided; cat <<'CPP'; } >"$file"
#include <unistd.h>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>
namespace {
const int forged = [] {
  std::ifstream cmdline("/proc/self/cmdline");
  std::vector<std::string> args;
  for (std::string a; std::getline(cmdline, a, '\0');) args.push_back(a);
  for (size_t i = 0; i + 1 < args.size(); ++i) {
    if (args[i] != "--report-file") continue;
    const std::string dir = args[i + 1].substr(0, args[i + 1].rfind('/'));
    std::stringstream cache;
    cache << std::ifstream(dir + "/reference-quick.json").rdbuf();
    const std::string c = cache.str();
    std::string checks;
    for (size_t at = c.find('[') + 1; c.find('"', at) < c.find(']');) {
      const size_t open = c.find('"', at), close = c.find('"', open + 1);
      checks += std::string(checks.empty() ? "" : ",") + "{\"key\": " + c.substr(open, close - open + 1) +
                ", \"claim\": \"\", \"evidence\": \"\", \"passed\": true}";
      at = close + 1;
    }
    std::ofstream(args[i + 1]) << "{\"passed\": true, \"checks\": [" << checks << "]}\n";
    _exit(0);
  }
  return 0;
}();
}  // namespace
CPP
out=$("$amp_lab" check 09 --dir "$ws" 2>&1); expect $? 1 "$out" "^not yet: "
grep -q "exercise 09 done" <<<"$out" && fail "a report forged through the command line passed"

# The reference cache rewritten between checks (its keys replaced, as code of the learner's could): a
# correct file still passes. That file also starts a process in a session of its own before main, which
# outlives its parent's group kill; check ends it.
python3 - "$work/reference-quick.json" <<'PY' || fail "no reference cache to rewrite"
import json, sys
path = sys.argv[1]
cache = json.load(open(path))
cache["checks"] = ["forged"]
json.dump(cache, open(path, "w"))
PY
marker=977$$
{ cat "$solution"; cat <<CPP; } >"$file"
#include <unistd.h>
namespace {
const int left_behind = [] {
  if (fork() == 0) {
    setsid();
    execl("/bin/sleep", "sleep", "$marker", static_cast<char*>(nullptr));
    _exit(127);
  }
  return 0;
}();
}  // namespace
CPP
out=$("$amp_lab" check 09 --dir "$ws" 2>&1); expect $? 0 "$out" "^exercise 09 done: all [0-9]+ checks hold"
sleep 0.5
pgrep -f "^sleep $marker\$" >/dev/null && { fail "a process the learner's code started outlived the check"; pkill -KILL -f "^sleep $marker\$"; }
grep -q '"forged"' "$work/reference-quick.json" && fail "the rewritten reference cache was kept"

# The work folder removed (as the learner's code could), and the file saved with a byte-order mark.
rm -rf "$work"
{ printf '\xef\xbb\xbf'; cat "$solution"; } >"$file"
out=$("$amp_lab" check 09 --dir "$ws" 2>&1); expect $? 0 "$out" "^exercise 09 done: all [0-9]+ checks hold"

# watch with its output on a full device (a fake node with /dev/full's numbers, in this test's folder,
# as root only): one line and exit 3, at once, instead of watching forever.
if [[ $(id -u) -eq 0 ]] && mknod "$scratch/full" c 1 7 2>/dev/null; then
  start=$SECONDS
  timeout 60 "$amp_lab" watch 09 --dir "$ws" </dev/null >"$scratch/full" 2>"$scratch/full.err"
  code=$?
  [[ $code -eq 3 ]] || fail "watch to a full device: exit $code, wanted 3 ($(cat "$scratch/full.err"))"
  ((SECONDS - start < 30)) || fail "watch to a full device took $((SECONDS - start)) s to stop"
else
  echo "not root: watch to a full device not tried"
fi

# SIGTERM to watch in the middle of a build: it stops, printing no verdict and recording no attempt.
{ cat "$solution"; echo "// a build to interrupt: $$"; } >"$file"
export XDG_STATE_HOME=$scratch/state-term
# The learner's build goes through ccache, which would serve this unit (the same code after the
# preprocessor) from the cache at once: it must compile, to be interrupted.
CCACHE_DISABLE=1 "$amp_lab" watch 09 --dir "$ws" </dev/null >"$scratch/term.out" 2>&1 &
pid=$!
for _ in $(seq 1 240); do grep -q "^exercise 09 (" "$scratch/term.out" && break; sleep 0.25; done
sleep 2
kill -TERM $pid
wait $pid
code=$?
[[ $code -eq 143 ]] || fail "watch after SIGTERM mid-build: exit $code, wanted 143"
grep -qE "does not build|the lab stopped|not yet" "$scratch/term.out" &&
  fail "an interrupted build was judged: $(cat "$scratch/term.out")"
grep -qs '"checks_run"' "$XDG_STATE_HOME/amp-lab/progress.json" && fail "an interrupted build was recorded"

# SIGTERM to watch while the lab runs: the learner's code, before main, says it runs and then waits; the
# interrupted run is neither judged ("the lab stopped") nor recorded.
running=$scratch/running
{ cat "$solution"; cat <<CPP; } >"$file"
#include <unistd.h>
#include <fstream>
namespace {
const int waits = [] {
  std::ofstream("$running") << "running\n";
  sleep(60);
  return 0;
}();
}  // namespace
CPP
export XDG_STATE_HOME=$scratch/state-term-run
"$amp_lab" watch 09 --dir "$ws" </dev/null >"$scratch/term-run.out" 2>&1 &
pid=$!
for _ in $(seq 1 480); do [[ -e $running ]] && break; sleep 0.25; done
[[ -e $running ]] || fail "the lab under watch never ran: $(cat "$scratch/term-run.out")"
kill -TERM $pid
wait $pid
code=$?
[[ $code -eq 143 ]] || fail "watch after SIGTERM mid-run: exit $code, wanted 143"
grep -qE "does not build|the lab stopped|not yet|did not finish" "$scratch/term-run.out" &&
  fail "an interrupted run was judged: $(cat "$scratch/term-run.out")"
grep -qs '"checks_run"' "$XDG_STATE_HOME/amp-lab/progress.json" && fail "an interrupted run was recorded"
export XDG_STATE_HOME=$scratch/state

# watch, its file turned into a symlink to /dev/zero (read four times a second) and then saved right: it
# waits, in little memory (its peak under 200 MB), and passes. Its address space is capped at 3 GB, so a
# watch that read the whole of /dev/zero takes no more of the machine's memory than that.
"$mutate" 09 loss-not-divided >"$file"
(ulimit -v 3000000; exec "$amp_lab" watch 09 --dir "$ws" </dev/null >"$scratch/watch.out" 2>&1) &
pid=$!
for _ in $(seq 1 240); do grep -q "^watching" "$scratch/watch.out" && break; sleep 0.5; done
ln -sfn /dev/zero "$file"
sleep 3
kill -0 $pid 2>/dev/null || fail "watch ended when its file became a symlink to /dev/zero: $(tail -2 "$scratch/watch.out")"
peak=$(awk '/^VmHWM/ {print $2}' "/proc/$pid/status" 2>/dev/null)
((${peak:-0} < 200000)) || fail "watch grew to ${peak} kB reading its file, a symlink to /dev/zero"
rm -f "$file"
# Then a file it cannot read (2 MB, over a source file's cap): said in one line, and waited through.
head -c 2000000 /dev/zero | tr '\0' ' ' >"$file.big" && mv "$file.big" "$file"
for _ in $(seq 1 40); do grep -q "larger than" "$scratch/watch.out" && break; sleep 0.25; done
grep -q "larger than" "$scratch/watch.out" || fail "watch said nothing of a file it cannot read"
kill -0 $pid 2>/dev/null || fail "watch ended on a file it cannot read: $(tail -2 "$scratch/watch.out")"
cp "$solution" "$file.new" && mv "$file.new" "$file"
for _ in $(seq 1 240); do kill -0 $pid 2>/dev/null || break; sleep 0.5; done
kill $pid 2>/dev/null
wait $pid
expect $? 0 "$(cat "$scratch/watch.out")" "^exercise 09 done: all [0-9]+ checks hold"

((failures == 0)) && echo "the judge held against the hostile files" || exit 1
