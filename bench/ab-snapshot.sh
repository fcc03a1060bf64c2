#!/usr/bin/env bash
# Side by side: the snapshot contestants of two builds in interleaved rounds, each run with its own COPY limit.
#   bench/ab-snapshot.sh ROUNDS OUT_DIR NAME=BENCH_JAR NAME=BENCH_JAR [bench options...]
# e.g. bench/ab-snapshot.sh 3 /tmp/ab before=/tmp/base/bench/target/millrace-bench.jar after=bench/target/millrace-bench.jar
# Each run: java -jar JAR --rows 1000000 --only snap-copy,snap-millrace-null,snap-millrace-jsonl --millrace-jvm lean
# (bin/millrace's JVM options for the Millrace contestants) plus the options given. Prints one line per contestant and
# run: round, build, load at start, seconds, first row s, x COPY of that run, CPU s; the runs' tables stay in OUT_DIR.
set -euo pipefail
rounds=$1; out=$2; a=$3; b=$4; shift 4
mkdir -p "$out"
for r in $(seq 1 "$rounds"); do
  for build in "$a" "$b"; do
    name=${build%%=*}; jar=${build#*=}
    dir="$out/r$r-$name"
    java -jar "$jar" --rows 1000000 --only snap-copy,snap-millrace-null,snap-millrace-jsonl --millrace-jvm lean \
      --out "$dir/results.md" "$@" > "$dir.log" 2>&1 || { echo "round $r $name failed: $dir.log" >&2; continue; }
    awk -v r="$r" -v n="$name" '/^snapshot/ {
        line = $0; sub(/^snapshot +/, "", line);
        split(line, f, /  +/);
        printf "round %s  %-8s %-36s load %5s  s %6s  first %5s  %6s  CPU %5s\n", r, n, f[1], f[12], f[4], f[5], f[8], f[11]
      }' "$dir.log"
  done
done
