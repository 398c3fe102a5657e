"""Built-in synthetic datasets: deterministic from a seed, nothing to download."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pandas as pd

from depthfinder.expectations.table.shape import PAIR_COLUMN, Task
from depthfinder.expectations.table.synthetic import NESTED_OPS_TASKS


@dataclass(frozen=True)
class BuiltinDataset:
    """A named generator of a labelled table: (text, label) rows, (text, pair, label) for a pairs task, or (tokens,
    tags) lists for a tokens task."""

    name: str
    description: str
    sample: Callable[[np.random.Generator, int], list[tuple[str, ...]]]
    task: Task = "classify"

    def generate(self, n_rows: int, seed: int) -> pd.DataFrame:
        """Generate `n_rows` rows; the same (n_rows, seed) always gives the same table.

        Args:
            n_rows: number of rows, at least 1.
            seed: seed of the generator.

        Returns:
            A frame with string columns `text` (and `pair`, for a pairs task) and `label`.
        """
        if n_rows < 1:
            raise ValueError(f"dataset {self.name!r}: n_rows must be at least 1, got {n_rows}")
        rows = self.sample(np.random.default_rng(seed), n_rows)
        if self.task == "tokens":
            return pd.DataFrame(rows, columns=["tokens", "tags"])
        columns = ["text", PAIR_COLUMN, "label"] if self.task == "pairs" else ["text", "label"]
        return pd.DataFrame(rows, columns=columns, dtype="str")


def _pick(rng: np.random.Generator, words: tuple[str, ...]) -> str:
    """One word of `words`, uniformly."""
    return words[int(rng.integers(len(words)))]


def _dress(rng: np.random.Generator, sentence: str, endings: tuple[str, ...]) -> str:
    """Capitalise sometimes and add an ending, so texts vary the way real ones do."""
    if rng.random() < 0.7:
        sentence = sentence[0].upper() + sentence[1:]
    return sentence + _pick(rng, endings)


# --- reviews-negation ---------------------------------------------------------------

_SUBJECTS = (
    "the battery", "the screen", "this blender", "the charger", "the customer service",
    "the delivery", "the sound quality", "the camera", "the keyboard", "this vacuum",
    "the headphones", "the app", "the packaging", "the fabric", "the zipper", "the handle",
    "this kettle", "the instructions", "the remote", "the build quality", "the speaker",
    "the mattress", "this lamp", "the strap", "the lid", "the display", "the software update",
    "the setup", "the coffee maker", "the charging cable", "the lens", "the microphone",
    "the touchpad", "the fan", "the motor", "the seller", "the refund process", "the fit",
    "the material", "the wheels", "the blade", "the battery life", "the case", "the hinge",
    "the pump", "the filter", "this router", "the thermostat", "the backpack", "the printer",
)
_POSITIVE = (
    "good", "great", "excellent", "reliable", "sturdy", "impressive", "solid", "decent",
    "fantastic", "comfortable", "responsive", "quiet", "fast", "durable", "useful",
    "pleasant", "superb", "flawless", "sharp", "convenient",
)
_NEGATIVE = (
    "bad", "terrible", "awful", "flimsy", "disappointing", "poor", "useless", "noisy",
    "slow", "fragile", "annoying", "broken", "horrible", "unreliable", "weak", "faulty",
    "mediocre", "clumsy", "defective", "cheaply made",
)
_INTENSIFIERS = ("", "", "really ", "very ", "quite ", "pretty ", "truly ", "surprisingly ")
_NEGATIONS = ("is not", "isn't", "is never", "is not really", "is not at all")
_REVIEW_PREFIXES = (
    "", "", "", "honestly, ", "to be fair, ", "after two weeks, ", "overall ", "i have to say ",
    "in short, ", "after a month of use, ", "for what it costs, ",
    "compared to my old one, ", "my wife thinks ", "as far as i can tell ", "update: ",
)
_REVIEW_SUFFIXES = (
    "", "", "", " for the price", " in my opinion", " so far", " to be honest",
    " if you ask me", " for daily use", " overall", " after the update", " for a gift",
)
_REVIEW_ENDINGS = ("", ".", ".", "!", "!!", "...")


def _adjective(rng: np.random.Generator) -> tuple[str, int]:
    """A random adjective and its polarity (+1 positive, -1 negative)."""
    polarity = 1 if rng.random() < 0.5 else -1
    return _pick(rng, _POSITIVE if polarity > 0 else _NEGATIVE), polarity


def _review_clause(rng: np.random.Generator, subject: str) -> tuple[str, int]:
    """A clause about `subject` and its polarity; half the templates need word order."""
    adjective, polarity = _adjective(rng)
    other = _pick(rng, _NEGATIVE if polarity > 0 else _POSITIVE)
    template = int(rng.integers(7))
    if template == 0:
        return f"{subject} is {_pick(rng, _INTENSIFIERS)}{adjective}", polarity
    if template == 1:
        return f"{subject} {_pick(rng, _NEGATIONS)} {adjective}", -polarity
    if template == 2:  # "good, not bad" vs "bad, not good": same words, opposite labels
        return f"{subject} is {adjective}, not {other}", polarity
    if template == 3:
        return f"{subject} is not {other}, it is {adjective}", polarity
    if template == 4:
        return f"i expected {subject} to be {other} but it is {adjective}", polarity
    if template == 5:
        return f"{subject} seemed {other} at first but turned out {adjective}", polarity
    opener = _pick(rng, ("i would not say", "nobody would say", "i would never say"))
    return f"{opener} {subject} is {adjective}", -polarity


def _sample_reviews(rng: np.random.Generator, n_rows: int) -> list[tuple[str, str]]:
    """Review sentences whose sentiment depends on negation and word order."""
    rows = []
    for _ in range(n_rows):
        clause, polarity = _review_clause(rng, _pick(rng, _SUBJECTS))
        sentence = _pick(rng, _REVIEW_PREFIXES) + clause + _pick(rng, _REVIEW_SUFFIXES)
        rows.append((_dress(rng, sentence, _REVIEW_ENDINGS), "positive" if polarity > 0 else "negative"))
    return rows


# --- topics ---------------------------------------------------------------------------

_TOPICS: dict[str, tuple[float, tuple[str, ...], tuple[str, ...], tuple[str, ...]]] = {
    # label: (share, agents, actions, objects)
    "sports": (0.4, (
        "the striker", "the goalkeeper", "the coach", "the referee", "the midfielder",
        "the captain", "the defender", "the sprinter", "the tennis player", "the cyclist",
        "the boxer", "the quarterback", "the swimmer", "the marathon runner", "the rookie",
    ), (
        "scored in", "missed", "dominated", "won", "trained hard for", "celebrated after",
        "argued about", "was benched for", "warmed up before", "was injured during",
    ), (
        "the penalty shootout", "the final match", "the championship", "the free kick",
        "the league title race", "the relay", "the semifinal", "the derby", "the qualifier",
        "the home game", "the tournament", "the rematch", "the season opener", "the playoffs",
    )),
    "technology": (0.3, (
        "the developer", "the engineer", "the startup", "the data scientist", "the programmer",
        "the sysadmin", "the chip maker", "the software team", "the security researcher",
        "the cloud provider", "the app developer", "the hardware vendor", "the open source community",
    ), (
        "released", "patched", "debugged", "deployed", "rewrote", "benchmarked",
        "updated", "open sourced", "recompiled", "encrypted",
    ), (
        "the firmware", "the database", "a new processor", "the operating system",
        "the mobile app", "the search engine", "the compiler", "the api", "the neural network",
        "the server cluster", "the browser extension", "the password manager", "the kernel",
    )),
    "cooking": (0.2, (
        "the chef", "the baker", "the cook", "my grandmother", "the pastry chef",
        "the sous chef", "the food critic", "the restaurant owner", "the caterer",
    ), (
        "baked", "roasted", "seasoned", "grilled", "simmered", "whisked", "tasted",
        "chopped", "fried", "marinated",
    ), (
        "the sourdough bread", "a chocolate cake", "the tomato soup", "the garlic",
        "the risotto", "the lamb stew", "the pancakes", "a lemon tart", "the vegetables",
        "the curry", "the pasta sauce", "the dumplings", "the salmon",
    )),
    "travel": (0.1, (
        "the tourist", "the backpacker", "the pilot", "the travel agent", "the hotel manager",
        "the tour guide", "the flight attendant", "the cruise passenger", "the hiker",
    ), (
        "booked", "cancelled", "visited", "explored", "delayed", "upgraded", "packed for",
        "photographed", "recommended", "got lost on",
    ), (
        "the flight to lisbon", "a hostel in prague", "the mountain trail", "the beach resort",
        "the train to kyoto", "the old town", "the museum tour", "a ferry to the island",
        "the night bus", "the hotel suite", "the airport shuttle", "the coastal road",
    )),
}
_TOPIC_PREFIXES = (
    "", "", "", "yesterday ", "last week ", "apparently ", "according to the news ",
    "my neighbour said ", "i heard that ", "this morning ", "once again ", "surprisingly ",
    "as usual ", "people say ",
)
_TOPIC_SUFFIXES = (
    "", "", "", " again", " before noon", " last weekend", " without any help",
    " in front of everyone", " for the third time", " after a long delay", " on sunday",
)
_TOPIC_ENDINGS = ("", ".", ".", ".", "!", "?")


# --- names-in-context -----------------------------------------------------------------

_PEOPLE = ("alice", "omar", "priya", "lena", "tomas", "mei", "kofi", "ines", "ravi", "sofia")
_PLACES = ("oslo", "lima", "kyoto", "cairo", "quito", "dakar", "porto", "hanoi", "bergen", "tunis")
# Names of a person and of a place alike: only their context tells which.
_EITHER = ("jordan", "paris", "georgia", "florence", "austin", "sydney", "victoria", "chelsea", "orlando", "india")
_SURNAMES = ("lee", "okafor", "novak", "sato", "silva", "haddad")
_ORGS = (("acme",), ("globex",), ("initech",), ("acme", "labs"), ("blue", "river", "bank"), ("north", "star", "media"))
_TO_PERSON = ("met with", "spoke to", "called", "thanked", "interviewed", "emailed")
_TO_PLACE = ("flew to", "lives in", "arrived in", "moved to", "stayed in", "drove to")
_TO_ORG = ("works at", "joined", "sued", "invested in", "left", "partnered with")
_ACTORS = ("she", "he", "the team", "my manager", "our lawyer", "a reporter")
_OPENINGS = ((), (), ("yesterday",), ("last", "week"), ("on", "monday"), ("apparently",), ("this", "morning"))
_ENDINGS = ((), (), ("again",), ("before", "lunch"), ("for", "the", "first", "time"), ("last", "year"))


def _entity(rng: np.random.Generator, kind: str) -> tuple[list[str], str]:
    """The tokens of one mention of `kind` (PER, LOC, ORG) and its type; an ambiguous name half of the time."""
    if kind == "ORG":
        return list(_ORGS[int(rng.integers(len(_ORGS)))]), "ORG"
    own = _PEOPLE if kind == "PER" else _PLACES
    name = [_pick(rng, _EITHER if rng.random() < 0.5 else own)]
    if kind == "PER" and rng.random() < 0.3:
        name.append(_pick(rng, _SURNAMES))
    return name, kind


def _tagged(words: list[str], kind: str | None) -> list[tuple[str, str]]:
    """(token, BIO tag) per word: O, or one mention of type `kind`."""
    if kind is None:
        return [(word, "O") for word in words]
    return [(word, f"{'B' if i == 0 else 'I'}-{kind}") for i, word in enumerate(words)]


def _sample_names_in_context(rng: np.random.Generator, n_rows: int) -> list[tuple[list[str], list[str]]]:
    """Sentences of one or two clauses, each a subject (a person or a pronoun), a verb phrase that says what follows
    it (a person, a place or an organisation) and that mention: the right tags are known by construction, and an
    ambiguous name's type is in the verb before it (or, as a subject, in its being the one who acts)."""
    rows = []
    cues = {"PER": _TO_PERSON, "LOC": _TO_PLACE, "ORG": _TO_ORG}
    for _ in range(n_rows):
        pairs = _tagged(list(_OPENINGS[int(rng.integers(len(_OPENINGS)))]), None)
        for clause in range(1 + int(rng.random() < 0.4)):
            if clause:
                pairs += _tagged(["and"], None)
            if rng.random() < 0.5:
                pairs += _tagged(*_entity(rng, "PER"))
            else:
                pairs += _tagged(_pick(rng, _ACTORS).split(), None)
            kind = ("PER", "LOC", "ORG")[int(rng.integers(3))]
            pairs += _tagged(_pick(rng, cues[kind]).split(), None) + _tagged(*_entity(rng, kind))
        pairs += _tagged(list(_ENDINGS[int(rng.integers(len(_ENDINGS)))]), None)
        rows.append(([token for token, _ in pairs], [tag for _, tag in pairs]))
    return rows


def _class_counts(n_rows: int, shares: list[float]) -> list[int]:
    """Rows per class in these shares, summing exactly to n_rows."""
    counts = [int(n_rows * share) for share in shares]
    for i in range(n_rows - sum(counts)):
        counts[i % len(counts)] += 1
    return counts


def _sample_topics(rng: np.random.Generator, n_rows: int) -> list[tuple[str, str]]:
    """Sentences from four class vocabularies with shared fillers, shares 40/30/20/10 %."""
    labels = list(_TOPICS)
    counts = _class_counts(n_rows, [_TOPICS[label][0] for label in labels])
    order = rng.permutation(np.repeat(np.arange(len(labels)), counts))
    return [(_topic_sentence(rng, labels[int(class_index)]), labels[int(class_index)]) for class_index in order]


def _topic_sentence(rng: np.random.Generator, topic: str) -> str:
    """One sentence of `topic`'s vocabulary, with the shared fillers."""
    _, agents, actions, objects = _TOPICS[topic]
    sentence = (
        f"{_pick(rng, _TOPIC_PREFIXES)}{_pick(rng, agents)} {_pick(rng, actions)} "
        f"{_pick(rng, objects)}{_pick(rng, _TOPIC_SUFFIXES)}"
    )
    return _dress(rng, sentence, _TOPIC_ENDINGS)


def _sample_same_topic(rng: np.random.Generator, n_rows: int) -> list[tuple[str, str, str]]:
    """Pairs of topic sentences, labelled `same` when both sides are of one topic and `different` otherwise (half
    each). Each side's topic is uniform whatever the label, so neither side alone says anything about it: only a
    model that reads both sides and compares them can score above the majority class."""
    topics = list(_TOPICS)
    rows = []
    for same in rng.permutation(np.arange(n_rows) % 2 == 0):
        first = _pick(rng, tuple(topics))
        second = first if same else _pick(rng, tuple(topic for topic in topics if topic != first))
        rows.append((_topic_sentence(rng, first), _topic_sentence(rng, second), "same" if same else "different"))
    return rows


DATASETS: dict[str, BuiltinDataset] = {
    dataset.name: dataset
    for dataset in (
        BuiltinDataset(
            name="reviews-negation",
            description=(
                "Product-review sentences, positive/negative; the label depends on negation "
                "and word order ('good, not bad' vs 'bad, not good'), so bag-of-words is not enough."
            ),
            sample=_sample_reviews,
        ),
        BuiltinDataset(
            name="topics",
            description=(
                "Short news-like sentences in 4 topics (40/30/20/10 %), class vocabularies plus shared fillers."
            ),
            sample=_sample_topics,
        ),
        BuiltinDataset(
            name="same-topic",
            description=(
                "Pairs of the topics' sentences (--task pairs), same or different topic (50/50 %); either side alone "
                "predicts nothing, so a model must compare the two."
            ),
            sample=_sample_same_topic,
            task="pairs",
        ),
        BuiltinDataset(
            name="names-in-context",
            description=(
                "Sentences tagged with people, places and organisations (--task tokens, BIO); half the names are both "
                "a person's and a place's (Jordan, Paris), their type told by the words around them."
            ),
            sample=_sample_names_in_context,
            task="tokens",
        ),
        *(BuiltinDataset(task.name, task.description, task.sample) for task in NESTED_OPS_TASKS),
    )
}


def list_datasets() -> list[BuiltinDataset]:
    """The built-in datasets, by name."""
    return [DATASETS[name] for name in sorted(DATASETS)]


def get_dataset(name: str) -> BuiltinDataset:
    """The built-in dataset called `name`; ValueError naming the known ones otherwise."""
    if name not in DATASETS:
        raise ValueError(f"unknown dataset {name!r}; expected one of: {', '.join(sorted(DATASETS))}")
    return DATASETS[name]
