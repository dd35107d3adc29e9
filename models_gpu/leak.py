"""Does a teacher turn give the reference answer away?

Rules, from the task's private reference:

- answer string (``reference["answer"]``, any verifier): a *normalized string match*. Text and
  answer are split into tokens (numbers such as "0.85" or "1,234" are one token, words are
  tokens, case folded, punctuation such as ``.,;:!?"'()[]{}*$`` dropped, operators such as
  ``+ - ^ = /`` kept), and the answer's tokens must appear consecutively in the text's. So the
  match ignores case, spacing and punctuation, and respects word boundaries: "85" is found in
  "It is 85." and "(85)", not in "850", "0.85" or "185".
- numeric answer (one that parses as a number: 85, "85", "3/4", "\\frac{3}{4}", 0.75; any verifier
  but ``code_guess``, whose digit codes are not numbers): a *numeric match* -- any number in the
  text equal to it ("85.0", "85", "1,234" for 1234, "0.75" for 3/4).
- multiple choice (a single-letter answer): the letter alone, in capitals ("B", "(B)", "option
  B"), but not "I" or a sentence-initial "A" used as a word ("I see", "A good start"); plus the
  correct choice's text when ``verifier_config["choices"]`` lists it.
- code tasks (``reference["solution"]``): any *non-trivial line* of the reference solution (at
  least ``MIN_CODE_LINE_CHARS`` characters without spaces, not a comment, not a line the task's
  prompt already shows such as the signature), matched with whitespace collapsed.

Numbers make the numeric match strict on purpose: a teacher who says "look at step 2" when the
answer is 2 is flagged. A judge model (``judge_request`` / ``parse_judge_reply``), when the
protocol asks for one, looks at the turns the rules did not flag, to catch paraphrases ("eighty
five", "add one to 84"); it cannot clear a rule's flag.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from models_gpu.spec.templates import DEFAULT_TEMPLATES
from models_gpu.types import GenerationRequest, Message, TaskSpec
from models_gpu.verifiers.extraction import find_numbers, parse_number

MIN_CODE_LINE_CHARS = 12
JUDGE_MAX_NEW_TOKENS = 4
_TOKEN = re.compile(r"\d+(?:[.,]\d+)*|[^\W\d_]+|\d+|[^\w\s]")
_SOFT_PUNCTUATION = frozenset(".,;:!?\"'`()[]{}*_$\u2018\u2019\u201c\u201d")


@dataclass(frozen=True)
class LeakReference:
    """What a teacher turn must not contain, prepared once per task."""

    answer_tokens: tuple[str, ...] = ()
    number: Fraction | None = None
    choice_letter: str | None = None
    code_lines: tuple[str, ...] = ()
    shown: str = ""  # the answer as a judge is shown it

    @property
    def empty(self) -> bool:
        return not (
            self.answer_tokens or self.number is not None or self.choice_letter or self.code_lines
        )


def leak_reference(task: TaskSpec) -> LeakReference:
    """The parts of ``task.reference`` a teacher must not reveal (empty when there are none)."""
    reference = task.reference
    code_lines: tuple[str, ...] = ()
    shown: list[str] = []
    if task.verifier_kind == "code" and reference.get("solution"):
        solution = str(reference["solution"])
        code_lines = _code_lines(solution, task.prompt)
        shown.append(solution)
    answer = reference.get("answer")
    if answer is None or isinstance(answer, bool | Mapping | list | tuple):
        return LeakReference(code_lines=code_lines, shown="\n".join(shown))
    text = _answer_text(answer).strip()
    shown.insert(0, text)
    tokens = _tokens(text)
    letter = None
    if task.verifier_kind == "multiple_choice" and re.fullmatch(r"[A-Za-z]", text):
        letter = text.upper()
        choice_text = _choice_text(task.verifier_config.get("choices"), letter)
        tokens = _tokens(choice_text) if choice_text else ()
    # A code to guess is a digit string, not a number: "0482" is not 482.
    numeric = letter is None and task.verifier_kind != "code_guess"
    return LeakReference(
        answer_tokens=tokens,
        number=parse_number(text) if numeric else None,
        choice_letter=letter,
        code_lines=code_lines,
        shown="\n".join(shown),
    )


def leaks(text: str, reference: LeakReference) -> bool:
    """Whether ``text`` states the reference answer by any of the rules above."""
    if reference.answer_tokens and _contains(_tokens(text), reference.answer_tokens):
        return True
    if reference.number is not None and any(
        parse_number(number) == reference.number for number in find_numbers(text)
    ):
        return True
    if reference.choice_letter is not None and _states_letter(text, reference.choice_letter):
        return True
    if reference.code_lines:
        collapsed = _collapse(text)
        return any(line in collapsed for line in reference.code_lines)
    return False


def judge_request(
    *, reference: LeakReference, text: str, seed: int,
    template: str = DEFAULT_TEMPLATES["judge_leak"],
) -> GenerationRequest:  # fmt: skip
    material = f"Reference answer:\n{reference.shown}\n\nThe teacher's message:\n{text}"
    messages = (
        (Message("system", template), Message("user", material))
        if template
        else (Message("user", material),)
    )
    return GenerationRequest(messages=messages, seed=seed, max_new_tokens=JUDGE_MAX_NEW_TOKENS)


def parse_judge_reply(text: str) -> bool | None:
    """True for "yes", False for "no" (case, quotes, asterisks, a final period aside); else None."""
    word = text.strip().strip("\"'`*_.:!").strip().casefold()
    return {"yes": True, "no": False}.get(word)


def _answer_text(answer: Any) -> str:
    if isinstance(answer, float) and answer.is_integer():
        return str(int(answer))  # 85.0 -> "85": the string match then finds "85" too
    return str(answer)


def _tokens(text: str) -> tuple[str, ...]:
    normalised = text.replace("\u2212", "-").casefold()
    return tuple(token for token in _TOKEN.findall(normalised) if token not in _SOFT_PUNCTUATION)


def _contains(haystack: Sequence[str], needle: Sequence[str]) -> bool:
    size = len(needle)
    return any(
        tuple(haystack[i : i + size]) == tuple(needle) for i in range(len(haystack) - size + 1)
    )


def _states_letter(text: str, letter: str) -> bool:
    for match in re.finditer(rf"(?<![\w'-]){letter}(?![\w'-])", text):
        before, after = text[: match.start()].rstrip(), text[match.end() : match.end() + 2]
        followed_by_a_word = re.fullmatch(r" [a-z]", after) is not None
        sentence_start = not before or before[-1] in ".!?:\n"
        if followed_by_a_word and (letter == "I" or (letter == "A" and sentence_start)):
            continue  # "I see", "A good start": the word, not the choice
        return True
    return False


def _choice_text(choices: object, letter: str) -> str | None:
    if not isinstance(choices, list | tuple):
        return None
    index = ord(letter) - ord("A")
    if not 0 <= index < len(choices):
        return None
    text = re.sub(r"^\s*\(?[A-Za-z][).:]\s+", "", str(choices[index]))  # "B) Paris" -> "Paris"
    return text if len(_tokens(text)) else None


def _collapse(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def _code_lines(solution: str, prompt: str) -> tuple[str, ...]:
    """Lines of the solution that would give it away: long enough, not in the prompt."""
    shown_in_prompt = {_collapse(line) for line in prompt.splitlines()}
    lines = []
    for raw in solution.splitlines():
        line = _collapse(raw)
        if (
            len(line.replace(" ", "")) >= MIN_CODE_LINE_CHARS
            and not line.startswith("#")
            and line not in shown_in_prompt
            and line not in lines
        ):
            lines.append(line)
    return tuple(lines)
