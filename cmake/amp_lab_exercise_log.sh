#!/bin/sh
# The compiler and linker launcher of an exercise's learner build: runs the command it is given and keeps
# what the command wrote to stderr in LOG, for `amp-lab check` to show as the compiler gave it.
#   amp_lab_exercise_log.sh LOG COMMAND...
log=$1
shift
"$@" 2>"$log"
rc=$?
cat "$log" >&2
exit $rc
