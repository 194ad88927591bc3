"""The README is a user's page and the guides hold together (issue 40).

On 82e7fca the README had 1071 lines, 26 of them over 400 characters, no troubleshooting and no
CHANGELOG. Now: at most 300 lines, none over 200 characters, the two developer commands
(`scripts/demo`, `scripts/test`) still named, every relative link in the README and in docs/
pointing at a file that exists (and at a heading that exists, for `file.md#anchor`), and a
CHANGELOG in Keep a Changelog form whose newest release is VERSION.
"""

from __future__ import annotations

import re
import unittest
from pathlib import Path

from support import REPO_ROOT

README = REPO_ROOT / "README.md"
LINK = re.compile(r"\]\(([^)\s]+)\)")


def anchors(path: Path) -> set[str]:
    """GitHub-style anchors of a Markdown file's headings."""
    out = set()
    for line in path.read_text().splitlines():
        m = re.match(r"^#{1,6} (.*)$", line)
        if m:
            title = m.group(1).strip().lower()
            title = re.sub(r"[^\w\- ]", "", title)
            out.add(title.replace(" ", "-"))
    return out


def code_free(text: str) -> str:
    """The text without fenced code blocks (a C array index is no link)."""
    return re.sub(r"^```.*?^```", "", text, flags=re.S | re.M)


class ReadmeTests(unittest.TestCase):
    maxDiff = None

    def test_readme_is_one_screenful_of_sections(self):
        lines = README.read_text().splitlines()
        self.assertLessEqual(len(lines), 300)
        long = [(i + 1, len(l)) for i, l in enumerate(lines) if len(l) > 200]
        self.assertEqual(long, [], "README lines over 200 characters")
        text = README.read_text()
        for must in ("scripts/demo", "scripts/test", "apt install ./broadcast_", "pip install",
                     "docs/troubleshooting.md", "docs/TESTING.md", "docs/ARCHITECTURE.md"):
            self.assertIn(must, text)
        # The builders' sections moved out.
        self.assertNotIn("## Architecture", text)
        self.assertNotIn("## Tests and tools", text)

    def test_every_relative_link_resolves(self):
        files = [README, REPO_ROOT / "CHANGELOG.md", *sorted((REPO_ROOT / "docs").glob("*.md"))]
        broken = []
        for f in files:
            for target in LINK.findall(code_free(f.read_text())):
                if re.match(r"^[a-z]+:", target):
                    continue   # http(s), mailto, man: not checked offline
                path, _, anchor = target.partition("#")
                dest = (f.parent / path).resolve() if path else f
                if not dest.exists():
                    broken.append(f"{f.relative_to(REPO_ROOT)}: {target} (no such file)")
                elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
                    broken.append(f"{f.relative_to(REPO_ROOT)}: {target} (no such heading)")
        self.assertEqual(broken, [])

    def test_changelog_is_keep_a_changelog_with_this_release(self):
        text = (REPO_ROOT / "CHANGELOG.md").read_text()
        version = (REPO_ROOT / "VERSION").read_text().strip()
        self.assertIn("Keep a Changelog", text)
        self.assertIn("## [Unreleased]", text)
        releases = re.findall(r"^## \[(\d+\.\d+\.\d+)\] - (\d{4}-\d{2}-\d{2})$", text, re.M)
        self.assertTrue(releases)
        self.assertEqual(releases[0][0], version)
        section = text.split(f"## [{version}]", 1)[1].split("\n## [", 1)[0]
        self.assertRegex(section, r"\n### (Added|Changed|Fixed|Removed)\n")


if __name__ == "__main__":
    unittest.main()
