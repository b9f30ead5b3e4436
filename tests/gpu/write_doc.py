"""write_doc.py - record a run of tests/gpu/run.sh in docs/gpu-conformance.md.

  write_doc.py DOC REPORT COMMAND

Inserts the report (header lines: date, machine, GPU, driver, versions; the
table) as the newest run between the markers below, keeping older runs and
everything else in DOC.  Without the markers, appends a section with them.
Never called in SIMULATED or --no-interposer mode (run.sh).
"""
import sys

BEGIN = "<!-- BEGIN tests/gpu/run.sh results (newest first) -->"
END = "<!-- END tests/gpu/run.sh results -->"


def main():
    doc, report, command = sys.argv[1:4]
    with open(report) as f:
        lines = [l.rstrip("\n") for l in f]
    if any(l.startswith("SIMULATED") for l in lines):
        sys.exit("write_doc: a SIMULATED report is never recorded")
    date = next((l.split(":", 1)[1].strip() for l in lines if l.startswith("# date:")), "?")
    fails = sum(1 for l in lines if len(l.split()) > 1 and l.split()[1] == "FAIL")
    block = "\n".join([
        "### Run of %s (%s)" % (date, "all rows PASS" if fails == 0 else "%d row(s) FAIL" % fails),
        "",
        "command: `%s` (from the repository root)" % command,
        "",
        "```",
    ] + lines + ["```", "", ""])
    try:
        with open(doc) as f:
            text = f.read()
    except FileNotFoundError:
        text = "# Real-GPU conformance of libtessel-cuda\n"
    if BEGIN in text and END in text:
        head, rest = text.split(BEGIN, 1)
        text = head + BEGIN + "\n\n" + block + rest.lstrip("\n")
    else:
        text = text.rstrip("\n") + "\n\n## Results of tests/gpu/run.sh\n\n" + BEGIN + "\n\n" + block + END + "\n"
    tmp = doc + ".tmp"
    with open(tmp, "w") as f:
        f.write(text)
    import os
    os.replace(tmp, doc)


if __name__ == "__main__":
    main()
