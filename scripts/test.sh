#!/usr/bin/env bash
# Installs what is missing, builds, and runs every test through ctest (build/); then
#  - the same suite built with AddressSanitizer + UndefinedBehaviorSanitizer (build-fuzz/, clang):
#    any sanitizer report, in the tests or in an rpb process they start, fails the run;
#  - each libFuzzer target (the same build-fuzz/) for RPB_FUZZ_SECONDS (30) over its committed
#    corpus (tests/fuzz/corpus/): a crash, a sanitizer report or a leak fails the run.
# RPB_SANITIZE_RUN=0 or RPB_FUZZ_SECONDS=0 skips a stage (for quick local runs; CI runs all).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
jobs=$(nproc)
scripts/deps.sh
# bench/run.sh builds the benchmarks; the test files compile in batches (RPB_TESTS_UNITY: 54 s -> 41 s here), and
# so do nn/, train/ and cli/ (RPB_UNITY): each of their files parses far more headers than its own code.
scripts/build.sh -DRPB_BUILD_BENCH=OFF -DRPB_TESTS_UNITY=ON -DRPB_UNITY=ON

# doctest_discover_tests splits a test name at ';' (a CMake list separator), so ctest would run such a test
# case under a name that matches nothing, and it would pass having run nothing: a name with ';' fails the run.
run_suite() {  # <build dir> [ctest options]
  local dir=$1
  shift
  local bad
  bad=$("$dir/rpb_tests" --list-test-cases --no-version | grep ';' || true)
  if [ -n "$bad" ]; then
    echo "test.sh: test case names with ';' (ctest cannot run them; use ','):" >&2
    echo "$bad" >&2
    return 1
  fi
  (cd "$dir" && ctest --output-on-failure -j"$jobs" --timeout 900 "$@") || return 1
}

BUILD=${RPB_BUILD_DIR:-build}
run_suite "$BUILD"

# Quiet build: the log is shown only when it fails.
quiet_build() {  # <build dir> <cmake configure args...>
  local dir=$1 log=$1.log
  shift
  if ! { cmake -S . -B "$dir" "$@" && cmake --build "$dir" -j"$jobs"; } > "$log" 2>&1; then
    tail -n 60 "$log"
    echo "test.sh: the build in $dir failed (log: $log)" >&2
    exit 1
  fi
}

# One clang build serves both later stages: ASan + UBSan in everything, and libFuzzer's coverage in every
# library (RPB_FUZZ), so the suite and the fuzz targets share it. clang compiles it in less time than gcc
# took for the sanitizer build alone (a clean CI run went from 13.7 to 8.9 minutes on 2 cores).
san_run=${RPB_SANITIZE_RUN:-1}
seconds=${RPB_FUZZ_SECONDS:-30}
if [ "$san_run" != 0 ] || [ "$seconds" != 0 ]; then
  echo "== sanitizer build: clang + ASan + UBSan + libFuzzer coverage (build-fuzz; ${SECONDS} s so far)"
  # -O1: compiles in about half the time of -O3, and the suite still runs in about a minute and a half.
  CC=clang-14 CXX=clang++-14 quiet_build build-fuzz -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_CXX_FLAGS_RELEASE="-O1 -DNDEBUG" -DRPB_FUZZ=ON -DRPB_CUDA=OFF -DRPB_BUILD_BENCH=OFF -DRPB_TESTS_OPT=-O0 -DRPB_TESTS_UNITY=ON -DRPB_UNITY=ON \
    -DRPB_BUILD_TESTS="$([ "$san_run" != 0 ] && echo ON || echo OFF)"
fi

if [ "$san_run" != 0 ]; then
  echo "== sanitizers: the suite under ASan + UBSan, two long tests and the Python, LaTeX and docs tests aside (build-fuzz; ${SECONDS} s so far)"
  reports=$root/build-fuzz/sanitizer-reports
  rm -rf "$reports" && mkdir -p "$reports"
  # Reports go to files, so that one from an rpb process a test starts (whose output the test
  # reads) is not lost; libhdf5's own leaks on damaged files are suppressed (tests/fuzz/lsan.supp).
  export ASAN_OPTIONS="log_path=$reports/asan:detect_leaks=1:strict_string_checks=1"
  export UBSAN_OPTIONS="log_path=$reports/ubsan:print_stacktrace=1:halt_on_error=1"
  export LSAN_OPTIONS="suppressions=$root/tests/fuzz/lsan.supp:print_suppressions=0"
  status=0
  # readme.walkthrough (the README's commands as written, 190 of the sanitized suite's 490 test-seconds) runs
  # in the suite above; here every path it takes is already run by the CLI tests (train, interrupt and resume,
  # eval, generate, inspect, the PyTorch interop). So does the comparison of rpb's SentencePiece ids with
  # SentencePiece's own over the KJV (42 test-seconds sanitized): the text task's tests run its code here. And the
  # tests of Python, LaTeX and the docs' text (python.*, bench.figures_redraw, latex.*, style.*, readme.links and
  # readme.front_door: about 75 test-seconds here), which run no rpb code or only what the CLI tests run. And the
  # config-key walk over the algorithmic tasks (half of the walk's 329 sanitized test-seconds, of 967, at issue 45): their
  # generators, framings and schemes run sanitized in their own tests; the walk over the other tasks stays.
  run_suite build-fuzz -E '^readme\.walkthrough$|^every config key is refused or honoured for every scheme of every algorithmic task$|^sentencepiece pieces: the ids are|^python\.|^bench\.figures_redraw$|^latex\.|^style\.|^readme\.(links|links_self_test|front_door)$' || status=$?
  if [ -n "$(ls -A "$reports")" ]; then
    for f in "$reports"/*; do echo "---- $f"; head -n 40 "$f"; done
    echo "test.sh: sanitizer reports in $reports" >&2
    status=1
  fi
  unset ASAN_OPTIONS UBSAN_OPTIONS LSAN_OPTIONS
  [ "$status" = 0 ] || exit "$status"
  echo "sanitizers: no reports (${SECONDS} s so far)"
fi

if [ "$seconds" != 0 ]; then
  echo "== fuzzing: tests/fuzz targets, ${seconds} s each (build-fuzz; ${SECONDS} s so far)"
  # Both targets at once, one core each. New inputs go to a scratch folder (the committed corpus is
  # read only); a crashing input is kept in build-fuzz/findings/ to reproduce with
  # build-fuzz/fuzz_<target> <file>, and then becomes a doctest regression test.
  mkdir -p build-fuzz/findings
  pids=()
  for target in config checkpoint; do
    work=build-fuzz/work-$target
    rm -rf "$work" && mkdir -p "$work"
    build-fuzz/fuzz_$target -seed=1 -max_total_time="$seconds" -timeout=60 -rss_limit_mb=2048 \
      -print_final_stats=1 -artifact_prefix=build-fuzz/findings/$target- "$work" "tests/fuzz/corpus/$target" \
      > build-fuzz/fuzz_$target.log 2>&1 &
    pids+=($!)
  done
  status=0
  for i in 0 1; do
    target=$([ "$i" = 0 ] && echo config || echo checkpoint)
    log=build-fuzz/fuzz_$target.log
    if wait "${pids[$i]}"; then
      runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
      echo "fuzz_$target: $runs inputs in ${seconds} s, corpus $(ls "tests/fuzz/corpus/$target" | wc -l) seeds + $(ls "build-fuzz/work-$target" | wc -l) new, no findings"
    else
      grep -v -e '^#' -e '^INFO' -e '^stat::' "$log" | tail -n 60
      echo "test.sh: fuzz_$target found a failing input (log: $log; input: build-fuzz/findings/)" >&2
      status=1
    fi
  done
  [ "$status" = 0 ] || exit "$status"
fi
echo "test.sh: all stages passed in ${SECONDS} s"
