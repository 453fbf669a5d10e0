#!/usr/bin/env python3
"""Writes one GPU test record (JSON) from what tools/device/gpu_tests.sh ran: gtest's JSON reports of the
carried test programs and the family checks' lines, with the commit the programs were built at, the GPU
and its driver. The records the repository keeps live in tests/gpu_records/ (format kiln.gpu-test-record/1,
docs/JSON.md).

Usage: gpu_test_record.py --out FILE --kiln-version TEXT --gpu TEXT [--program NAME:FILTER:REPORT.json:RC]...
                          [--families SUMMARY.txt]
"""
import argparse
import datetime
import json
import re
import sys

FORMAT = "kiln.gpu-test-record/1"


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", required=True, help="the record to write")
    p.add_argument("--kiln-version", required=True, help="what `kiln --version` printed")
    p.add_argument("--gpu", required=True, help="nvidia-smi's name, driver_version line")
    p.add_argument("--program", action="append", default=[],
                   help="NAME:FILTER:REPORT:RC of one test program (REPORT: its --gtest_output=json file)")
    p.add_argument("--families", help="the family checks' summary (tools/device/families_gpu.sh)")
    return p.parse_args(argv)


def commit_of(version_text):
    """The commit `kiln --version` names ("kiln 0.1.0 (commit abc123)"); "unknown" when it names none."""
    found = re.search(r"\(commit ([^)]+)\)", version_text)
    return found.group(1) if found else "unknown"


def program_result(spec):
    """Counts and failures of one gtest program from its JSON report; a program that wrote no report (it
    crashed or timed out) is one failure named after its exit status."""
    name, test_filter, report, rc = spec.rsplit(":", 3)
    result = {"program": name, "filter": test_filter, "exit_status": int(rc),
              "passed": 0, "failed": 0, "skipped": 0, "failures": []}
    try:
        with open(report) as f:
            suites = json.load(f).get("testsuites", [])
    except (OSError, ValueError):
        result["failed"] = 1
        result["failures"].append(f"{name}: no gtest report (exit status {rc})")
        return result
    for suite in suites:
        for test in suite.get("testsuite", []):
            full = f"{suite['name']}.{test['name']}"
            if test.get("failures"):
                result["failed"] += 1
                result["failures"].append(full)
            elif test.get("result") == "SKIPPED" or test.get("status") == "NOTRUN":
                result["skipped"] += 1
            else:
                result["passed"] += 1
    return result


def family_results(summary_path):
    """The family checks' verdicts: each compare line ends OK or MISMATCH; a failed build or run counts
    as failed."""
    checks = []
    with open(summary_path) as f:
        for line in f:
            text = line.strip()
            if text.endswith(" OK") or text.endswith(" MISMATCH"):
                checks.append({"check": re.sub(r"\s{2,}.*", "", text), "ok": text.endswith(" OK")})
            elif "build failed" in text or "run failed" in text:
                checks.append({"check": text[:160], "ok": False})
    return checks


def main(argv):
    args = parse_args(argv)
    gpu, _, driver = args.gpu.partition(",")
    programs = [program_result(spec) for spec in args.program]
    families = family_results(args.families) if args.families else []
    record = {
        "format": FORMAT,
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "commit": commit_of(args.kiln_version),
        "gpu": gpu.strip(),
        "driver": driver.strip(),
        "programs": programs,
        "family_checks": families,
        "all_passed": all(p["failed"] == 0 and p["exit_status"] == 0 for p in programs)
                      and all(c["ok"] for c in families),
    }
    with open(args.out, "w") as f:
        json.dump(record, f, indent=1)
        f.write("\n")
    for p in programs:
        print(f"{p['program']} ({p['filter']}): {p['passed']} passed, {p['failed']} failed, "
              f"{p['skipped']} skipped, exit status {p['exit_status']}")
        for failure in p["failures"][:20]:
            print(f"  FAILED {failure}")
    if families:
        print(f"family checks: {sum(c['ok'] for c in families)} of {len(families)} OK")
    print(f"record: {args.out} (all passed: {record['all_passed']})")
    return 0 if record["all_passed"] else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
