#!/usr/bin/env bash
# Builds the libFuzzer targets (tests/fuzz/libfuzzer, clang) and runs each one for a bounded time.
#
#   tests/fuzz/run_fuzz.sh [--seconds S] [--runs N] [--build DIR] [--targets "a b"] [--jobs J]
#
# Defaults: 5 s or 200000 executions per target, whichever comes first; build dir build/fuzz.
# Every target starts from its seed corpus (valid encodings, written by write_corpus) plus
# tests/fuzz/regressions/<target>/ and the inputs earlier runs kept in DIR/corpus/<target>/.
# Prints one summary line per target (executions, coverage, corpus size, result) and exits 1 if
# any target crashed, leaked or broke a property (its input is kept in DIR/artifacts/), 77 when
# clang or libFuzzer is not installed (CTest reports a skip).
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
seconds=5
runs=200000
build="$root/build/fuzz"
targets=""
jobs="${SPOTLIGHT_JOBS:-2}"
while [ $# -gt 0 ]; do
  case "$1" in
    --seconds) seconds="$2"; shift 2 ;;
    --runs) runs="$2"; shift 2 ;;
    --build) build="$2"; shift 2 ;;
    --targets) targets="$2"; shift 2 ;;
    --jobs) jobs="$2"; shift 2 ;;
    *) echo "run_fuzz: unknown argument $1" >&2; exit 2 ;;
  esac
done

cxx="${SPOTLIGHT_FUZZ_CXX:-clang++}"
if ! command -v "$cxx" >/dev/null; then
  echo "run_fuzz: $cxx not found (scripts/bootstrap installs clang); skipping"
  exit 77
fi
probe="$(mktemp -d)"
trap 'rm -rf "$probe"' EXIT
printf 'extern "C" int LLVMFuzzerTestOneInput(const unsigned char*, unsigned long) { return 0; }\n' \
  >"$probe/p.cpp"
if ! "$cxx" -fsanitize=fuzzer "$probe/p.cpp" -o "$probe/p" 2>"$probe/err"; then
  echo "run_fuzz: $cxx cannot link libFuzzer (libclang-rt-*-dev missing?): $(head -c 300 "$probe/err"); skipping"
  exit 77
fi

generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
if [ ! -f "$build/CMakeCache.txt" ]; then
  CXX="$cxx" cmake -S "$root/tests/fuzz/libfuzzer" -B "$build" "${generator[@]}" "${launcher[@]}" \
    -DCMAKE_BUILD_TYPE=Debug >"$build.configure.log" 2>&1 || { cat "$build.configure.log"; exit 1; }
fi
cmake --build "$build" -j "$jobs" >"$build/build.log" 2>&1 || { tail -50 "$build/build.log"; exit 1; }

[ -n "$targets" ] || targets="$(cat "$build/targets.txt" | tr ';' ' ')"
"$build/write_corpus" "$build/seeds"
mkdir -p "$build/artifacts"
failed=0
total_execs=0
printf '%-22s %10s %8s %8s %6s  %s\n' target executions exec/s cov corpus result
for t in $targets; do
  mkdir -p "$build/corpus/$t" "$build/logs"
  dirs=("$build/corpus/$t" "$build/seeds/$t")
  [ -d "$root/tests/fuzz/regressions/$t" ] && dirs+=("$root/tests/fuzz/regressions/$t")
  log="$build/logs/$t.log"
  set +e
  ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1}" UBSAN_OPTIONS="print_stacktrace=1" \
    "$build/fuzz_$t" -max_total_time="$seconds" -runs="$runs" -max_len=4096 -rss_limit_mb=2048 \
    -timeout=10 -print_final_stats=1 -artifact_prefix="$build/artifacts/$t-" "${dirs[@]}" \
    >"$log" 2>&1
  rc=$?
  set -e
  execs="$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)"
  speed="$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)"
  cov="$(grep -oE 'cov: [0-9]+' "$log" | tail -1 | cut -d' ' -f2)"
  corpus="$(ls "$build/corpus/$t" | wc -l)"
  result=ok
  if [ $rc -ne 0 ]; then
    result="FAILED (rc $rc, see $log)"
    failed=1
    grep -E "ERROR|FuzzPropertyViolation|what\(\)|Test unit written" "$log" | head -5 || true
  fi
  total_execs=$((total_execs + ${execs:-0}))
  printf '%-22s %10s %8s %8s %6s  %s\n' "$t" "${execs:-?}" "${speed:-?}" "${cov:-?}" "$corpus" "$result"
done
echo "run_fuzz: $total_execs executions in total"
exit $failed
