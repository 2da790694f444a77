"""Documents for the fetch and convert tests: a page with boilerplate, and real PDFs made here."""

from __future__ import annotations

from collections.abc import Sequence

ARTICLE_TITLE = "Tidal locking explained"
ARTICLE = f"""<!doctype html>
<html><head><meta charset="utf-8"><title>{ARTICLE_TITLE} | Example Site</title></head>
<body>
<nav><a href="/">Home</a> <a href="/about">About us</a> <a href="/shop">Shop now</a></nav>
<main><article><h1>{ARTICLE_TITLE}</h1>
<p>Tidal locking happens when a moon always shows the same face to its planet. Over millions of
years, tidal forces slow the moon's spin until its rotation period matches its orbital period.</p>
<p>The Moon is tidally locked to the Earth, which is why we always see the same near side. Many
moons in the solar system are locked in the same way, including the large moons of Jupiter.</p>
</article></main>
<footer>Copyright 2024 Example Corp. All rights reserved. Subscribe to our newsletter.</footer>
</body></html>
""".encode()
BOILERPLATE = ("About us", "Shop now", "Copyright", "newsletter")


def _pdf_string(text: str) -> bytes:
    escaped = text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")
    return b"(" + escaped.encode("latin-1") + b")"


def make_pdf(lines: Sequence[str], *, title: str | None = None) -> bytes:
    """A one-page PDF with `lines` in Helvetica, written out by hand with a correct xref table."""
    content = b"BT /F1 12 Tf 72 720 Td 14 TL\n"
    content += b"".join(_pdf_string(line) + b" Tj T*\n" for line in lines) + b"ET"
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792]"
        b" /Resources << /Font << /F1 4 0 R >> >> /Contents 5 0 R >>",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>",
        b"<< /Length %d >>\nstream\n%s\nendstream" % (len(content), content),
    ]
    if title is not None:
        objects.append(b"<< /Title " + _pdf_string(title) + b" >>")
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n%s\nendobj\n" % (number, body)
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    info = b" /Info %d 0 R" % len(objects) if title is not None else b""
    out += b"trailer\n<< /Size %d /Root 1 0 R%s >>\n" % (len(objects) + 1, info)
    out += b"startxref\n%d\n%%%%EOF\n" % xref
    return bytes(out)
