"""Write toolidx/search/places.txt, the place words toolidx.search.gate never takes as what a
request is about ("book a flight to paris": the subject is the flight): the city, island and
region words of the IANA time-zone database (Python's zoneinfo.available_timezones()) and the
country names of its iso3166.tab, lowercase, one a line. A word that is also a common English
word or a catalog's ("center", "easter", "turkey", "christmas", "phoenix", "reunion") is left out
(COMMON): as a place it says little, as a word it may be the subject.

    python scripts/places.py
"""

from __future__ import annotations

import re
import sys
import zoneinfo
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
OUT = REPO / "toolidx" / "search" / "places.txt"
ISO3166 = Path("/usr/share/zoneinfo/iso3166.tab")
COMMON = frozenset(
    """
    acre act atlantic bay branch broken cape center central chatham christmas city continental creek
    current davis dawson del des east eastern easter factory fort general grand guinea harbour hill
    inlet island islands isle jersey kingdom knox lord lower man mountain navajo new north norfolk
    oral pacific palmer phoenix pole port princes regina republic resolute reunion river saint
    salem south spain stanley states swift tell the troll turkey united universal west western
    zulu mayen helena george virgin santa san and of cook land ocean union wake heard minor outlying
    territory terr rep sandwich thunder rainy goose vista prince coral localtime northern
    """.split()  # noqa: SIM905 - a word list, read as one
)


def words(name: str) -> list[str]:
    return [w for w in re.findall(r"[a-z]+", name.lower()) if len(w) > 2 and w not in COMMON]


def main() -> int:
    found: set[str] = set()
    for zone in zoneinfo.available_timezones():
        last = zone.split("/")[-1]
        if last.isupper() or any(ch.isdigit() for ch in last):  # GMT+3, EST5EDT, UTC: no place
            continue
        found.update(words(last.replace("_", " ")))
    if ISO3166.is_file():
        for line in ISO3166.read_text().splitlines():
            if line and not line.startswith("#"):
                found.update(words(re.sub(r"\(.*?\)", " ", line.split("\t")[1])))
    else:
        print(f"{ISO3166} missing: country names left out", file=sys.stderr)
    header = "# toolidx.search.gate: place words, never a request's subject (scripts/places.py)\n"
    OUT.write_text(header + "".join(w + "\n" for w in sorted(found)))
    print(f"{OUT}: {len(found)} words")
    return 0


if __name__ == "__main__":
    sys.exit(main())
