"""Chunking follows Python's syntax tree and windows everything else."""

from shadowrl.search.chunking import MODULE_SYMBOL, ChunkConfig, chunk_file, is_line_chunked
from shadowrl.search.embedders import HashEmbedder
from shadowrl.search.index import SemanticIndex

SAMPLE = '''\
"""Module docstring."""
import os

LIMIT = 3


# Parses a date.
@cache
@other(1)
def parse(text):
    def inner():
        return 1
    return inner()


class Store(Base):
    """A store."""

    kind = "kv"

    @property
    def size(self):
        return 0

    async def fetch(self, key):
        return key

    class Meta:
        ordering = 1

        def describe(self):
            return "meta"

    extra = 2


if __name__ == "__main__":
    parse(os.getcwd())
'''


def _spans(chunks):
    return [(c.symbol, c.start_line, c.end_line) for c in chunks]


def test_python_module_is_split_into_definitions_and_gaps():
    chunks = chunk_file("pkg/mod.py", SAMPLE)
    assert _spans(chunks) == [
        (MODULE_SYMBOL, 1, 4),  # docstring, import, constant
        ("parse", 7, 13),  # comment + decorators + nested function stay together
        ("Store", 16, 19),  # class line, docstring, class attribute
        ("Store.size", 21, 23),
        ("Store.fetch", 25, 26),
        ("Store.Meta", 28, 29),
        ("Store.Meta.describe", 31, 32),
        ("Store", 34, 34),  # class-level code after the methods
        (MODULE_SYMBOL, 37, 38),
    ]
    lines = SAMPLE.splitlines()
    for c in chunks:
        assert c.path == "pkg/mod.py"
        assert c.text == "\n".join(lines[c.start_line - 1 : c.end_line])
    assert chunks[1].text.startswith("# Parses a date.\n@cache\n@other(1)\ndef parse")


def test_line_numbers_follow_python_line_breaks_only():
    source = "import os\r\n\x0c\n# page break above\ndef f():\n    return '\u2028'\n"
    (gap, func) = chunk_file("ff.py", source)
    assert (gap.start_line, gap.end_line, func.symbol, func.start_line, func.end_line) == (
        1, 1, "f", 3, 5
    )  # fmt: skip
    assert func.text.startswith("# page break above\ndef f():")


def test_long_definitions_are_split_into_bounded_chunks():
    body = "\n".join(f"    x{i} = {i}" for i in range(25))
    chunks = chunk_file("a.py", f"def big():\n{body}\n", ChunkConfig(max_lines=10))
    assert _spans(chunks) == [("big", 1, 10), ("big", 11, 20), ("big", 21, 26)]


def test_text_files_and_unparseable_python_use_overlapping_windows():
    text = "\n".join(f"line {i}" for i in range(1, 26))
    config = ChunkConfig(window_lines=10, window_overlap=2)
    notes = chunk_file("notes.md", text, config)
    assert [(c.start_line, c.end_line) for c in notes] == [(1, 10), (9, 18), (17, 25)]
    assert notes[1].text.splitlines()[0] == "line 9"
    broken = chunk_file("broken.py", "def (:\n" + text, config)
    assert [(c.start_line, c.end_line) for c in broken] == [(1, 10), (9, 18), (17, 26)]
    assert all(c.symbol == "" for c in notes + broken)


def test_python_too_deep_for_the_parser_is_chunked_by_lines_and_counted():
    deep = "x = " + "-" * 200_000 + "1\n"  # the parser runs out of stack: MemoryError
    chunks = chunk_file("deep.py", "def ok():\n    pass\n" + deep)
    assert chunks and is_line_chunked(chunks)
    index = SemanticIndex.build({"deep.py": deep, "ok.py": "def ok():\n    pass\n"}, HashEmbedder())
    assert index.unparsed == ["deep.py"]


def test_blank_windows_binaries_and_huge_files_yield_nothing():
    assert chunk_file("blank.txt", "\n" * 100) == []
    assert chunk_file("blob.py", "def f():\x00 pass") == []
    assert chunk_file("big.txt", "x" * 100, ChunkConfig(max_file_bytes=50)) == []
    assert chunk_file("empty.py", "") == []
    assert chunk_file("blank.md", "") == []
