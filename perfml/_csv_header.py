"""The header of a user's CSV must name its columns plainly: separated by commas, each name once.

pandas reads a repeated header name as ``name`` and ``name.1``: a query file with two
``input_size`` columns would then be answered from the first and carry the second to the
output under another name, and nobody would know which size was meant. A file separated
by semicolons or tabs (a spreadsheet export in a locale whose decimal mark is the comma)
reads as one column named ``board;app_id;input_size``, and was refused for lacking the
``app_id`` column the user can see in it. The readers of the user's files (queries,
``--reference``, ``--calibration``) call :func:`check_header` first. (nvprof exports
legitimately repeat two metric descriptions, so the profile reader does not.)
"""

from __future__ import annotations

from collections import Counter

__all__ = ["FileRows", "check_header", "compression_mismatch", "duplicate_columns", "file_rows", "first_bad_utf8",
           "header_names", "not_utf8", "other_separator", "read_text_csv", "record_lines"]

#: separators of CSV-like exports other than the comma perfml reads
OTHER_SEPARATORS = {";": "semicolons", "\t": "tabs", "|": "vertical bars"}


def header_names(path) -> list[str]:
    """The header's names as written (a file without a header line: none)."""
    import pandas as pd

    header = pd.read_csv(path, header=None, nrows=1, dtype=str, keep_default_na=False)
    return [str(v) for v in header.iloc[0].tolist()] if len(header) else []


def duplicate_columns(path, names: list[str] | None = None) -> dict[str, list[int]]:
    """Header names given more than once (surrounding spaces ignored) -> their 1-based column numbers.

    ``names``: the header, already read (:func:`header_names`).
    """
    names = [n.strip() for n in (header_names(path) if names is None else names)]
    counts = Counter(names)
    return {name: [i + 1 for i, n in enumerate(names) if n == name] for name, k in counts.items() if k > 1}


def other_separator(names: list[str]) -> str | None:
    """The separator (a key of :data:`OTHER_SEPARATORS`) of a header read as one column whose
    name it splits into printable names, else None (a binary file's first "line" may hold a
    tab among control bytes: it is no header, and the reader's own refusal, not UTF-8 text or
    not CSV, stands)."""
    if len(names) != 1:
        return None
    found = [sep for sep in OTHER_SEPARATORS
             if len(parts := names[0].split(sep)) > 1 and all(p.strip() and p.strip().isprintable() for p in parts)]
    return found[0] if len(found) == 1 else None


#: compressions pandas reads a CSV in by its name's suffix, and the bytes such a file starts with
COMPRESSIONS = {".gz": ("gzip", b"\x1f\x8b"), ".bz2": ("bzip2", b"BZh"), ".xz": ("xz", b"\xfd7zXZ\x00"),
                ".zip": ("zip", b"PK\x03\x04"), ".zst": ("zstd", b"\x28\xb5\x2f\xfd")}


def compression_mismatch(path) -> str | None:
    """Why ``path``'s name and its first bytes disagree on its compression (None where they agree).

    pandas decompresses by the name alone: a gzip file named ``.csv`` read as text failed
    as "not UTF-8 text", and a plain CSV named ``.csv.gz`` as "cannot be read (None)".
    """
    try:
        with open(path, "rb") as fh:
            head = fh.read(6)
    except OSError:  # the reader's own message names why
        return None
    suffix = "." + str(path).lower().rsplit(".", 1)[-1] if "." in str(path) else ""
    by_name = COMPRESSIONS.get(suffix)
    by_bytes = next((kind for kind, magic in COMPRESSIONS.values() if head.startswith(magic)), None)
    if by_name is not None and by_bytes != by_name[0]:
        actually = f" (it is {by_bytes}-compressed)" if by_bytes else ""
        return f"is named {suffix} but is not {by_name[0]}-compressed{actually}; rename it without {suffix}, or compress it with {by_name[0]}"
    if by_name is None and by_bytes is not None:
        ending = next(s for s, (kind, _) in COMPRESSIONS.items() if kind == by_bytes)
        return (f"is {by_bytes}-compressed but its name does not end with {ending}; add {ending} to its name "
                "(perfml then reads it decompressed) or decompress it")
    return None


def check_header(path, error: type[Exception], where: str | None = None) -> list[str]:
    """Raise ``error`` for a file whose name and content disagree on its compression
    (:func:`compression_mismatch`), a header separated by other than commas
    (:func:`other_separator`), a comment line where the header should be, or naming the
    first repeated header name of ``path`` and where it occurs.

    Returns the header's names (as :func:`header_names`), so a reader need not read it again.
    """
    why = compression_mismatch(path)
    if why is not None:
        raise error(f"{where or path}: {why}")
    names = header_names(path)
    sep = other_separator(names)
    if sep is not None:
        raise error(f"{where or path}: the header reads as one column, {names[0]!r}: its names are separated by "
                    f"{OTHER_SEPARATORS[sep]}, and perfml reads comma-separated files; save the file as CSV with "
                    "commas (a spreadsheet's 'CSV UTF-8 (comma delimited)')")
    if names and names[0].lstrip().startswith("#") and "board" not in (n.strip() for n in names):
        # (a real header may name its first column "#run": it still names the board column)
        raise error(f"{where or path}: the first line, {','.join(names)!r}, is read as the header: perfml does not skip "
                    "comment lines; remove it, so that the file starts with the header's names")
    repeated = duplicate_columns(path, names)
    if repeated:
        name, columns = next(iter(repeated.items()))
        raise error(f"{where or path}: the header names column {name!r} {len(columns)} times (columns "
                    f"{', '.join(map(str, columns))}); keep one, so that it is clear which values are meant")
    return names


def first_bad_utf8(path) -> tuple[int, int, str] | None:
    """(line, byte offset, reason) of the first byte of ``path`` (decompressed as its name
    says) that is not UTF-8, or None. The offset a reader's exception gives is within the
    chunk it decoded (pandas reads in chunks), not within the file."""
    import bz2
    import gzip
    import lzma

    opener = {".gz": gzip.open, ".bz2": bz2.open, ".xz": lzma.open}.get("." + str(path).lower().rsplit(".", 1)[-1], open)
    try:
        with opener(path, "rb") as fh:
            data = fh.read()
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        return data.count(b"\n", 0, exc.start) + 1, exc.start, exc.reason
    except (OSError, EOFError, ValueError):  # unreadable: no position to give
        return None
    return None


def not_utf8(where, exc: UnicodeDecodeError, path=None) -> str:
    """The message for a user's CSV that is not UTF-8 text (a UTF-16 or legacy-encoded export).

    With ``path``, the first bad byte is found in the file itself (:func:`first_bad_utf8`).
    """
    found = first_bad_utf8(path) if path is not None else None
    at = f"line {found[0]}, byte {found[1]}: {found[2]}" if found else f"{exc.reason}"
    return (f"{where}: is not UTF-8 text ({at}); save it as a UTF-8 CSV (a spreadsheet's "
            "'CSV UTF-8'; UTF-16 'Unicode text' exports are not read)")


def record_lines(path) -> list[int] | None:
    """The line (1-based) each data record of the CSV starts on, as pandas reads the records.

    Row r of a file is on line r + 2 only when no blank line precedes it and no quoted cell
    before it spans lines; pandas skips blank (and whitespace-only) lines and reads a quoted
    newline as part of the cell, so a message naming "line r + 2" pointed elsewhere. None
    when the file cannot be read so (another compression): the caller keeps r + 2.
    """
    import csv
    import gzip

    name = str(path)
    if name.endswith((".bz2", ".zip", ".xz", ".zst", ".tar")):
        return None
    opener = gzip.open if name.endswith(".gz") else open
    lines: list[int] = []
    try:
        with opener(path, "rt", encoding="utf-8-sig", newline="") as fh:
            reader = csv.reader(fh)
            end, header = 0, False
            for record in reader:
                start, end = end + 1, reader.line_num
                if not record or (len(record) == 1 and not record[0].strip()):
                    continue  # a blank line, skipped by pandas
                if header:
                    lines.append(start)
                header = True
    except (OSError, UnicodeDecodeError, csv.Error):
        return None
    return lines


class FileRows(str):
    """A file label that names its rows by the lines they start on (:func:`record_lines`).

    ``FileRows("q.csv", [2, 5])(1)`` is "q.csv: row 2 (line 5)". A ``str``, so it reads as
    the file's label wherever a plain name is used.
    """

    def __new__(cls, label: str, lines):
        obj = super().__new__(cls, label)
        obj.lines = list(lines)
        return obj

    def __call__(self, row: int) -> str:
        line = self.lines[row] if 0 <= row < len(self.lines) else row + 2
        return f"{str(self)}: row {row + 1} (line {line})"


def file_rows(label: str, frame):
    """``label``, or a :class:`FileRows` of it when the rows of ``frame`` (as :func:`read_text_csv`
    read them) do not all sit on line row + 2."""
    lines = frame.attrs.get("record_lines") if hasattr(frame, "attrs") else None
    if not lines or len(lines) != len(frame) or all(line == r + 2 for r, line in enumerate(lines)):
        return label
    return FileRows(label, lines)


def read_text_csv(path):
    """The CSV as text columns, exactly as given (empty cells are empty strings), every row
    holding at most as many fields as the header.

    pandas takes a first data row with one field more than the header as an unnamed index
    column and drops it silently (a comma inside an unquoted note shifts every cell of the
    row); ``index_col=False`` turns that into a ``ParserWarning``, raised here as a
    ``pandas.errors.ParserError``. A later row with too many fields is a ``ParserError``
    of pandas itself ("Expected 3 fields in line 3, saw 4"). Short rows read as empty cells.
    """
    import warnings

    import pandas as pd

    with warnings.catch_warnings():
        warnings.simplefilter("error", pd.errors.ParserWarning)
        try:
            frame = pd.read_csv(path, dtype=str, keep_default_na=False, low_memory=False, index_col=False)
        except pd.errors.ParserWarning:
            raise pd.errors.ParserError(
                "a row has more fields than the header has names; quote a field that contains a comma, "
                "or name every column in the header") from None
    # pandas names a column with a blank header "Unnamed: 3"; the file's own name (blank) is
    # kept, so that a column perfml does not use reaches the output as the user wrote it
    written = header_names(path) if any(str(c).startswith("Unnamed: ") for c in frame.columns) else []
    if len(written) == frame.shape[1]:
        frame.columns = [name if str(column).startswith("Unnamed: ") and not name.strip() else column
                         for column, name in zip(frame.columns, written)]
    # "board, app_id, input_size" names the columns board, app_id and input_size, as the
    # cells' surrounding spaces are dropped (the duplicate check compares stripped names too)
    frame.columns = [str(c).strip() if str(c).strip() else c for c in frame.columns]
    lines = record_lines(path)
    if lines is not None and len(lines) == len(frame):  # for file_rows: messages name the right line
        frame.attrs["record_lines"] = lines
    return frame
