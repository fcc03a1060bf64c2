#!/usr/bin/env bash
# Builds the benchmark jar (with the modules it needs, from this working tree) and runs it.
# Arguments go to the benchmark (docs/BENCHMARKS.md):
#   bench/run.sh                      the side-by-side run, 1,000,000 rows per phase
#   bench/run.sh --rows 200000        a shorter one
#   bench/run.sh jmh DecoderBenchmark the JMH micro-benchmarks of the decoder hot paths
# BENCH_NO_BUILD=1 skips the build (use the jar already in bench/target).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${BENCH_NO_BUILD:-}" != 1 ]; then
  mvn -B -q -pl bench -am -DskipTests package
fi
exec java -jar bench/target/millrace-bench.jar "$@"
