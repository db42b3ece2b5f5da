# SPDX-License-Identifier: Apache-2.0
"""Compares the differential probe's output for NVIDIA's library with ufile's.

  compare.py NVIDIA_TXT UFILE_TXT KNOWN_DIFFERENCES [--report FILE]
  compare.py --check-list KNOWN_DIFFERENCES
  compare.py --check-ufile UFILE_TXT KNOWN_DIFFERENCES   (ufile's values alone)

Each output line "<case>.<step> <value>" is keyed by its first word; other
lines (what a library printed itself) are ignored. The run fails (exit 1) on:
a crash (a value with "crashed"), an output without its "probe.cases N" line
or whose N cases do not each end with "<case>.END exit 0", a case that found
no usable GPU, a key printed twice, a difference that no entry of the list
excuses or whose values the entry does not allow, and an entry that excused
nothing (the list holds only what differs).

The list: one entry a line, four fields separated by tabs:
  KEY  NVIDIA_VALUE  UFILE_VALUE  REASON
KEY is an exact key, or "~" and a regular expression anchored with ^...$
over keys that differ for one reason. A value is the exact text, "(no line)",
or "~" and an anchored regular expression. A pattern must match the whole key
or value (re.fullmatch): "^a|b$" matches "a" and "b", not every key starting
with "a". END keys and "crashed" values are never excused. Lines starting with
"#" are comments."""
import re
import sys

KEY = re.compile(r"^[a-z_0-9]+\.\S+$")
NO_LINE = "(no line)"


class ListError(Exception):
    pass


def _pattern(text, what, lineno):
    body = text[1:]
    if not (body.startswith("^") and body.endswith("$")):
        raise ListError(f"line {lineno}: {what} pattern {text!r} is not anchored (^...$)")
    try:
        return re.compile(body)
    except re.error as exc:
        raise ListError(f"line {lineno}: {what} pattern {text!r}: {exc}") from exc


def _value(text, lineno):
    if "crashed" in text:
        raise ListError(f"line {lineno}: a crash is never excused: {text!r}")
    if text.startswith("~"):
        return _pattern(text, "value", lineno)
    return text


def load_list(path):
    """The entries: dicts with key (str or pattern), nvidia, ufile, why, line."""
    entries, exact = [], set()
    with open(path, encoding="utf-8") as f:
        for lineno, line in enumerate(f, 1):
            line = line.rstrip("\n")
            if not line.strip() or line.startswith("#"):
                continue
            fields = line.split("\t")
            if len(fields) != 4 or not all(x.strip() for x in (fields[0], fields[3])):
                raise ListError(f"line {lineno}: want KEY, NVIDIA, UFILE, REASON separated by tabs")
            key, nvidia, ufile, why = fields
            if key.startswith("~"):
                key = _pattern(key, "key", lineno)
            elif not KEY.match(key) or key.endswith(".END") or key == "probe.cases":
                raise ListError(f"line {lineno}: {key!r} is not a step key")
            elif key in exact:
                raise ListError(f"line {lineno}: {key} is listed twice")
            else:
                exact.add(key)
            entries.append({"key": key, "nvidia": _value(nvidia, lineno),
                            "ufile": _value(ufile, lineno), "why": why, "line": lineno,
                            "used": 0})
    return entries


def load_output(path, name, problems, gpu_cases=True):
    """key -> value, in order; adds what makes the output unusable to problems.
    Without gpu_cases a case that found no GPU is dropped, not a problem."""
    out = {}
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            line = line.rstrip("\n")
            key, _, value = line.rstrip().partition(" ")
            if not KEY.match(key):
                continue
            if key in out:
                problems.append(f"{name}: {key} printed twice")
            out[key] = value
    cases = out.get("probe.cases", "")
    if not cases.isdigit() or int(cases) == 0:
        problems.append(f"{name}: no 'probe.cases N' line: the probe did not run")
    ends = {k[:-4]: v for k, v in out.items() if k.endswith(".END")}
    if cases.isdigit() and len(ends) != int(cases):
        problems.append(f"{name}: {len(ends)} END lines for {cases} cases")
    for key, value in out.items():
        case = key.split(".", 1)[0]
        if "crashed" in value:
            problems.append(f"{name}: {key} {value}")
        elif key.endswith(".END") and value != "exit 0":
            problems.append(f"{name}: {key} {value}")
        elif key.endswith(".cuda") and gpu_cases:
            problems.append(f"{name}: {key} {value}: the case compared nothing")
        elif case != "probe" and case not in ends:
            problems.append(f"{name}: case {case} has no END line")
    if not gpu_cases:
        no_gpu = {k.split(".", 1)[0] for k in out if k.endswith(".cuda")}
        out = {k: v for k, v in out.items() if k.split(".", 1)[0] not in no_gpu}
    return out


def check_ufile(ufile, entries, problems):
    """ufile's side of the list against ufile's output alone: each entry's
    ufile value holds for every key it covers there, and each entry over a
    case that ran covers a key or names "(no line)"."""
    cases = {k.split(".", 1)[0] for k in ufile}
    for e in entries:
        exact = isinstance(e["key"], str)
        keys = [e["key"]] if exact else [k for k in ufile if e["key"].fullmatch(k)]
        if exact and e["key"].split(".", 1)[0] not in cases:
            continue  # a GPU case that did not run here
        if not exact and not keys:
            continue
        for key in keys:
            got = ufile.get(key, NO_LINE)
            if not _allows(e["ufile"], got):
                want = e["ufile"].pattern if isinstance(e["ufile"], re.Pattern) else e["ufile"]
                problems.append(f"list line {e['line']}: {key}: ufile gives {got!r}, "
                                f"the list says {want!r}")


def _allows(want, got):
    return bool(want.fullmatch(got)) if isinstance(want, re.Pattern) else want == got


def _entry_for(key, entries, problems):
    for e in entries:
        if e["key"] == key:
            return e
    found = [e for e in entries if isinstance(e["key"], re.Pattern) and e["key"].fullmatch(key)]
    if len(found) > 1:
        problems.append(f"{key}: matched by list lines {[e['line'] for e in found]}")
    return found[0] if found else None


def compare(nvidia, ufile, entries, problems, report, proposed):
    """Counts (same, known); unexcused differences go to problems."""
    keys = list(nvidia) + [k for k in ufile if k not in nvidia]
    same = known = 0
    for key in keys:
        a, b = nvidia.get(key, NO_LINE), ufile.get(key, NO_LINE)
        if a == b:
            same += 1
            continue
        text = f"{key}\n  nvidia: {a}\n  ufile:  {b}"
        e = None if key.endswith(".END") or key == "probe.cases" else _entry_for(key, entries,
                                                                                 problems)
        if e and _allows(e["nvidia"], a) and _allows(e["ufile"], b):
            e["used"] += 1
            known += 1
            report.append(f"known  {text}\n  why:    {e['why']}")
            continue
        where = f" (list line {e['line']} allows other values)" if e else ""
        problems.append(f"DIFFER {text}{where}")
        report.append(f"DIFFER {text}{where}")
        proposed.append(f"{key}\t{a}\t{b}\t" + (e["why"] if e else "REASON"))
    for e in entries:
        if isinstance(e["key"], re.Pattern):
            for key in keys:
                if (key.endswith(".END") or key == "probe.cases") and e["key"].fullmatch(key):
                    problems.append(f"list line {e['line']} covers {key}: never excused")
        if not e["used"]:
            key = e["key"].pattern if isinstance(e["key"], re.Pattern) else e["key"]
            problems.append(f"list line {e['line']} ({key}) excused no difference: remove it")
    return same, known


def main(argv):
    if len(argv) == 2 and argv[0] == "--check-list":
        try:
            print(f"{len(load_list(argv[1]))} entries")
        except (ListError, OSError) as exc:
            print(f"{argv[1]}: {exc}")
            return 1
        return 0
    if len(argv) == 3 and argv[0] == "--check-ufile":
        problems = []
        try:
            entries = load_list(argv[2])
            check_ufile(load_output(argv[1], "ufile", problems, gpu_cases=False), entries,
                        problems)
        except (ListError, OSError) as exc:
            problems.append(str(exc))
        for p in problems:
            print(p)
        print(f"ufile's values in the list: {len(problems)} problems")
        return 1 if problems else 0
    report_path = None
    if len(argv) == 5 and argv[3] == "--report":
        report_path = argv.pop(4)
        argv.pop(3)
    if len(argv) != 3:
        print(__doc__)
        return 2
    try:
        entries = load_list(argv[2])
    except (ListError, OSError) as exc:
        print(f"{argv[2]}: {exc}")
        return 1
    problems, report, proposed = [], [], []
    try:
        nvidia = load_output(argv[0], "nvidia", problems)
        ufile = load_output(argv[1], "ufile", problems)
    except OSError as exc:
        print(f"cannot read an output: {exc}")
        return 1
    same, known = compare(nvidia, ufile, entries, problems, report, proposed)
    for p in problems:
        print(p)
    if report_path:
        with open(report_path, "w", encoding="utf-8") as f:
            f.write("\n".join(report) + "\n")
        with open(report_path + ".proposed", "w", encoding="utf-8") as f:
            f.write("".join(line + "\n" for line in proposed))
    n = len(set(nvidia) | set(ufile))
    print(f"{n} keys: {same} identical, {known} known differences (docs/API.md), "
          f"{len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
