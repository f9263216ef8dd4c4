"""The same answers to the byte: every output of the golden corpus
(tests/golden/: the bundled example, DDP, a merge of two nodes, a killed
recording, an empty run, a schema-3 file) against what was kept when it was
recorded. An intended change of output is made with
`python tests/golden/golden.py update` in the same commit."""

import importlib.util
import pathlib

from conftest import PROGRAM, ROOT

spec = importlib.util.spec_from_file_location("golden", ROOT / "tests" / "golden" / "golden.py")
golden = importlib.util.module_from_spec(spec)
spec.loader.exec_module(golden)


def test_every_output_of_the_corpus_is_the_same_to_the_byte():
    golden.PROGRAM = PROGRAM
    differ = golden.check()
    assert differ == [], (
        f"outputs differ from tests/golden/expected/: {differ}; today's are "
        f"in {pathlib.Path('/tmp')}/golden-* (golden.py update takes them)"
    )


def test_the_check_fails_on_one_changed_byte(tmp_path, monkeypatch):
    """The check can fail: an expected file with one byte changed is caught."""
    expected = tmp_path / "expected"
    expected.mkdir()
    for f in golden.EXPECTED.iterdir():
        (expected / f.name).write_bytes(f.read_bytes())
    victim = expected / "empty.report.txt"
    data = bytearray(victim.read_bytes())
    data[-2] ^= 1
    victim.write_bytes(bytes(data))
    monkeypatch.setattr(golden, "EXPECTED", expected)
    monkeypatch.setattr(golden, "CORPUS", {"empty": golden.CORPUS["empty"]})
    golden.PROGRAM = PROGRAM
    assert golden.check() == ["empty.report.txt"]
