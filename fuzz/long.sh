#!/bin/sh
# long.sh: every libFuzzer harness to FUZZ_RUNS executions (default 10
# million) or FUZZ_SECONDS seconds each (default 600), whichever comes
# first, on a copy of its seed corpus; the table of executions, coverage
# and findings goes to out/report.md (make -C fuzz long).
set -u
cd "$(dirname "$0")"
RUNS=${FUZZ_RUNS:-10000000}
SECS=${FUZZ_SECONDS:-600}
mkdir -p out
report=out/report.md
{
  echo "# Fuzzing: $(date -u '+%Y-%m-%d %H:%M UTC'), commit $(git rev-parse --short HEAD 2>/dev/null || echo ?)"
  echo
  echo "Each harness to $RUNS executions or $SECS s, from its seed corpus (libFuzzer, ASan+UBSan)."
  echo
  echo "| harness | executions | seconds | exec/s | coverage (cov) | features (ft) | corpus | findings |"
  echo "|---|---:|---:|---:|---:|---:|---:|---|"
} > "$report"
fail=0
for h in ${HARNESSES:-fuzz_extract fuzz_config fuzz_rpc fuzz_prompt fuzz_state fuzz_serve fuzz_hook fuzz_assemble fuzz_testrun fuzz_mentions fuzz_prefilter fuzz_snapshot}; do
  name=${h#fuzz_}
  work=out/corpus-$name
  mkdir -p "$work" out/crashes-$name
  cp corpus/$name/* "$work"/ 2>/dev/null
  log=out/$name.log
  printf '%s: fuzzing (up to %s runs, %s s)...\n' "$h" "$RUNS" "$SECS" >&2
  t0=$(date +%s)
  build/$h "$work" -runs="$RUNS" -max_total_time="$SECS" -print_final_stats=1 \
    -artifact_prefix=out/crashes-$name/ -rss_limit_mb=4096 > "$log" 2>&1
  rc=$?
  t1=$(date +%s)
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  speed=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
  cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 | cut -d' ' -f2)
  ft=$(grep -o 'ft: [0-9]*' "$log" | tail -1 | cut -d' ' -f2)
  n=$(ls "$work" | wc -l)
  found=$(ls out/crashes-$name | wc -l)
  if [ "$rc" -ne 0 ] || [ "$found" -ne 0 ]; then fail=1; what="$found artifact(s), exit $rc: see $log"; else what="none"; fi
  echo "| $h | ${execs:-?} | $((t1 - t0)) | ${speed:-?} | ${cov:-?} | ${ft:-?} | $n | $what |" >> "$report"
  printf '%s: %s executions, cov %s, findings: %s\n' "$h" "${execs:-?}" "${cov:-?}" "$what" >&2
done
cat "$report"
exit $fail
