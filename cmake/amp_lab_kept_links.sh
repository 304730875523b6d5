#!/bin/sh
# The link of each learner file the tests keep, compiled together in one unit (amp_lab_add_kept_units in
# cmake/AmpLabExercises.cmake): file F's code and its copy of amp.h are in namespace amp_lab_kept_F, and the
# lab's object calls labNN:: functions. For each F this writes OUT_DIR/F.rsp, the linker options that
# define each symbol the lab's object uses and does not define, and F defines, as F's definition
# (-Wl,--defsym=lab-name=F-name): the demangled names match once "amp_lab_kept_F::" is taken out of F's.
# A function F lacks stays undefined, and the link says so, as it would for F alone.
#   amp_lab_kept_links.sh NM CXXFILT OUT_DIR UNIT_OBJECT LAB_OBJECTS F...   (LAB_OBJECTS: ':'-separated)
set -eu
nm=$1 filt=$2 out=$3 unit=$4 lab=$5
shift 5
tmp=$out/.symbols.$$
trap 'rm -f "$tmp".*' EXIT
# Mangled and demangled names side by side: what the lab uses, what the unit defines.
IFS=:
# shellcheck disable=SC2086
"$nm" -P -u $lab | awk 'NF > 1 { print $1 }' | sort -u >"$tmp.u"
unset IFS
"$filt" <"$tmp.u" | paste "$tmp.u" - >"$tmp.used"
"$nm" -P --defined-only "$unit" | awk '{ print $1 }' | sort -u >"$tmp.d"
"$filt" <"$tmp.d" | paste "$tmp.d" - >"$tmp.defined"
for f in "$@"; do
  awk -F '\t' -v ns="amp_lab_kept_$f::" '
    NR == FNR { if (index($2, ns)) { name = $2; while ((at = index(name, ns))) name = substr(name, 1, at - 1) substr(name, at + length(ns)); def[name] = $1 } next }
    $2 in def { print "-Wl,--defsym=" $1 "=" def[$2] }' "$tmp.defined" "$tmp.used" >"$tmp.rsp"
  # Replaced only when it changed, so that an unchanged map relinks nothing.
  if cmp -s "$tmp.rsp" "$out/$f.rsp"; then rm -f "$tmp.rsp"; else mv "$tmp.rsp" "$out/$f.rsp"; fi
done
