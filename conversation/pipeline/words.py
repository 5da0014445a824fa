"""Content words of German text: the deviation measure and the memory filter share them."""

from __future__ import annotations

import re

_WORD_RE = re.compile(r"[A-Za-zÄÖÜäöüß]+")
# Function words, pronouns, auxiliaries and fillers that carry no fact of their own. A reply
# that only changes these (du → Sie, "gern", "also") has not added content.
STOPWORDS = frozenset(
    """
    aber alle allem allen aller alles also als am an ans auch auf aus bei beim bin bis bist da
    dabei damit dann darauf darin darum das dass dein deine deinem deinen deiner dem den denen
    denn der des dessen dich die dies diese diesem diesen dieser dieses dir doch dort du durch
    ein eine einem einen einer eines er es etwas euch euer eure für gab gegen gern gerne gibt
    habe haben hast hat hatte hier ich ihm ihn ihnen ihr ihre ihrem ihren ihrer im in ins ist
    ja jetzt kann kannst kein keine können könnt mal man mehr mein meine meinem meinen meiner
    mich mir mit muss musst nach nein nicht nichts noch nun nur ob oder ohne schon sehr sei
    seid sein seine sich sie sind so sollst soll sondern sowie über um und uns unser unsere
    unter vom von vor war waren warst was weil welche wenn wer werde werden wie wieder will
    willst wir wird wirst wo wollen würde zu zum zur zwar sagen sagt sage gesagt genau okay ok
    hallo hey hi danke bitte klar gut also eben einfach vielleicht wohl ganz etwa
    """.split()
)


def content_words(text: str) -> set[str]:
    """Lower-cased words of three or more letters that are not function words."""
    return {
        w for w in (m.lower() for m in _WORD_RE.findall(text)) if len(w) >= 3 and w not in STOPWORDS
    }


def new_word_share(reply: str, content: str) -> tuple[float, list[str]]:
    """Share of the reply's content words that the content did not contain, and those words.

    Seed 003 §3.3: two generating stages can drift apart; this makes the drift measurable.
    """
    reply_words = content_words(reply)
    if not reply_words:
        return 0.0, []
    new = sorted(reply_words - content_words(content))
    return round(len(new) / len(reply_words), 3), new


def overlap(text: str, other: str) -> float:
    """Share of ``text``'s content words that also occur in ``other`` (0 when text has none)."""
    words = content_words(text)
    if not words:
        return 0.0
    return len(words & content_words(other)) / len(words)
