"""Transcripts as the speech model writes them: lower-case letters, digits as words, apostrophes and single spaces.

    normalize_transcript("Mr. Smith's 3 dogs—“tired”!")  ->  "mr smith's three dogs tired"

The alphabet is ALPHABET (the model's output characters, without its special ids). Accented letters lose their
accents (NFKD), curly apostrophes become "'", digits become their names one by one (AN4 and FSDD speak digits one
at a time: "2 0" is "two zero"), and any other character separates words.
"""
import re
import unicodedata

ALPHABET = " '" + "abcdefghijklmnopqrstuvwxyz"
DIGIT_WORDS = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine")
APOSTROPHES = "\u2019\u2018\u02bc`"
NOT_IN_ALPHABET = re.compile(r"[^a-z' ]+")
STRAY_APOSTROPHE = re.compile(r"(^|\s)'+|'+(\s|$)")


def normalize_transcript(text):
    text = unicodedata.normalize("NFKD", text)
    text = "".join(c for c in text if not unicodedata.combining(c))
    for mark in APOSTROPHES:
        text = text.replace(mark, "'")
    text = re.sub(r"[0-9]", lambda m: f" {DIGIT_WORDS[int(m.group())]} ", text.lower())
    text = NOT_IN_ALPHABET.sub(" ", text)
    # Quotes used as quotation marks ('like this') are not apostrophes inside a word.
    text = STRAY_APOSTROPHE.sub(" ", f" {text} ")
    return " ".join(text.split())


def an4_transcript(line):
    """'RUBOUT G M E F THREE NINE (an251-fash-b)' -> ('an251-fash-b', 'rubout g m e f three nine')."""
    words, _, rest = line.rstrip().rpartition(" (")
    if not rest.endswith(")") or not words:
        raise ValueError(f"not an AN4 transcription line: {line!r}")
    return rest[:-1], normalize_transcript(words)
