"""The audit of a token-labels table: the text checks read a sentence as one example, and each token check finds a
planted defect in exactly the sentences it was planted in and passes once it is fixed."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from depthfinder.expectations.audit.checks.conflicting_labels import ConflictingLabelsCheck
from depthfinder.expectations.audit.checks.entities_seen_in_train import EntitiesSeenInTrainCheck
from depthfinder.expectations.audit.checks.entity_type_imbalance import MIN_TRAIN_MENTIONS, EntityTypeImbalanceCheck
from depthfinder.expectations.audit.checks.inconsistent_span_tags import InconsistentSpanTagsCheck
from depthfinder.expectations.audit.checks.schema import SchemaCheck
from depthfinder.expectations.audit.checks.tag_scheme_violations import TagSchemeViolationsCheck
from depthfinder.expectations.audit.checks.token_label_noise import TokenLabelNoiseCheck
from depthfinder.expectations.audit.config import AuditConfig
from depthfinder.expectations.audit.registry import REGISTRY, TOKEN_REGISTRY
from depthfinder.expectations.audit.run import run_audit
from depthfinder.expectations.audit.token_labels import mention_records, span_tags
from tests.expectations.audit.test_pairs import made_up_words

TOKEN_CHECKS = set(TOKEN_REGISTRY.names()) - set(REGISTRY.names())
# What comes before a mention of each type, so a per-token baseline can tell the types apart by context.
CUES = {"PER": ("mr", "dr", "ms"), "LOC": ("in", "near", "from"), "ORG": ("at", "for", "with")}
ORG_ENDINGS = ("Corp", "Group", "Bank")


def canonical(tokens: list[list[str]], tags: list[list[str]], splits: list[str]) -> pd.DataFrame:
    """A token table as the readers give it: tokens, tags, their joins as text and label, split and row."""
    return pd.DataFrame({
        "tokens": tokens, "tags": tags, "text": [" ".join(sentence) for sentence in tokens],
        "label": [" ".join(sentence) for sentence in tags], "split": splits, "row": np.arange(len(tokens)),
    })


def with_tags(table: pd.DataFrame, index: int, tags: list[str]) -> None:
    """Retag one sentence in place (its label follows)."""
    table.at[index, "tags"] = tags
    table.at[index, "label"] = " ".join(tags)


class Names:
    """Made-up names per entity type: train draws from the first part of each list, val/test from a later part
    that overlaps it a little, so most val/test mentions are unseen in train, as in a well-split corpus."""

    def __init__(self, rng: np.random.Generator) -> None:
        words = rng.permutation(made_up_words(560, rng))
        self.fillers = words[:300]
        self.first, self.last = np.char.capitalize(words[300:340]), np.char.capitalize(words[340:420])
        self.places, self.orgs = np.char.capitalize(words[420:500]), np.char.capitalize(words[500:560])

    def mention(self, entity_type: str, split: str, rng: np.random.Generator) -> list[str]:
        """The tokens of one mention: train names from the first 60 % of a list, val/test from its last half."""
        def draw(names: np.ndarray) -> str:
            cut = len(names) * 3 // 5 if split == "train" else len(names) // 2
            return str(rng.choice(names[:cut] if split == "train" else names[cut:]))

        if entity_type == "PER":
            return [str(rng.choice(self.first)), draw(self.last)]
        if entity_type == "LOC":
            return [draw(self.places)]
        return [draw(self.orgs), str(rng.choice(ORG_ENDINGS))]


def token_table(sentences: int = 2000, seed: int = 0) -> pd.DataFrame:
    """A clean BIO table: 4-8 filler words with one or two mentions (PER 2 tokens, LOC 1, ORG 2) after a cue word."""
    rng = np.random.default_rng(seed)
    names = Names(rng)
    draw = rng.random(sentences)
    splits = np.where(draw < 0.1, "val", np.where(draw < 0.2, "test", "train")).tolist()
    all_tokens, all_tags = [], []
    for split in splits:
        tokens = [str(word) for word in rng.choice(names.fillers, rng.integers(4, 9))]
        tags = ["O"] * len(tokens)
        for entity_type in rng.choice(list(CUES), rng.integers(1, 3), p=[0.4, 0.35, 0.25]):
            free = [at for at in range(len(tokens) + 1) if at == len(tokens) or not tags[at].startswith("I-")]
            at = int(rng.choice(free))  # never inside a mention
            mention = names.mention(str(entity_type), split, rng)
            tokens[at:at] = [str(rng.choice(CUES[entity_type])), *mention]
            tags[at:at] = ["O", *span_tags(str(entity_type), len(mention), "BIO")]
        all_tokens.append(tokens)
        all_tags.append(tags)
    return canonical(all_tokens, all_tags, splits)


def to_bioes(tags: list[str]) -> list[str]:
    """BIO tags as BIOES."""
    out = []
    for i, tag in enumerate(tags):
        following = tags[i + 1] if i + 1 < len(tags) else "O"
        ends = following != f"I-{tag[2:]}"
        if tag.startswith("B-"):
            out.append(("S-" if ends else "B-") + tag[2:])
        elif tag.startswith("I-"):
            out.append(("E-" if ends else "I-") + tag[2:])
        else:
            out.append(tag)
    return out


@pytest.fixture(scope="module")
def clean() -> pd.DataFrame:
    return token_table()


def rows_of(table: pd.DataFrame, split: str, count: int, skip: int = 0) -> list[int]:
    return table.index[table["split"] == split][skip : skip + count].tolist()


def entity_positions(tags: list[str], entity_type: str) -> list[int]:
    return [i for i, tag in enumerate(tags) if tag == f"B-{entity_type}"]


def with_tokens(table: pd.DataFrame, index: int, tokens: list[str]) -> None:
    """Replace one sentence's tokens in place (its text follows)."""
    table.at[index, "tokens"] = tokens
    table.at[index, "text"] = " ".join(tokens)


def commonest_mention(table: pd.DataFrame, entity_type: str) -> pd.DataFrame:
    """The records of the commonest mention of a type (see token_labels.mention_records)."""
    records = mention_records(table)
    records = records[records["type"] == entity_type]
    return records[records["text"] == records["text"].value_counts().index[0]]


def test_a_token_table_gets_the_token_checks_and_its_clean_audit_passes(clean: pd.DataFrame) -> None:
    report = run_audit(clean, AuditConfig())
    assert [check.name for check in report.checks] == TOKEN_REGISTRY.names()
    assert {
        "tag_scheme_violations", "test_entities_seen_in_train", "inconsistent_span_tags", "entity_type_imbalance",
        "token_label_noise",
    } == TOKEN_CHECKS
    assert not {"label_in_text", "label_giveaway_columns", "suspected_label_noise", "class_imbalance"} & set(
        TOKEN_REGISTRY.names())
    assert report.verdict == "passed", report.headline
    assert report.check("test_entities_seen_in_train").headline.endswith("test/val entity mentions are unseen in train")
    assert report.check("token_label_noise").observed["fraction"] == 0


def test_a_classify_table_runs_no_token_check(clean: pd.DataFrame) -> None:
    report = run_audit(clean.drop(columns=["tokens", "tags"]).head(300), AuditConfig())
    assert [check.name for check in report.checks] == REGISTRY.names()


def test_schema_finds_tokens_and_tags_that_cannot_be_read_in_exactly_their_rows(clean: pd.DataFrame) -> None:
    table = clean.copy()
    short, text, bad_tag = rows_of(table, "train", 3)
    with_tags(table, short, table.at[short, "tags"][:-1])
    table.at[text, "tokens"] = table.at[text, "text"]
    with_tags(table, bad_tag, ["X-PER", *table.at[bad_tag, "tags"][1:]])
    check = run_audit(table, AuditConfig(), checks=[SchemaCheck]).check("schema")
    assert not check.success and check.severity == "error"
    assert check.failing_rows == sorted([short, text, bad_tag])
    assert {example["row"]: example["problem"] for example in check.examples} == {
        short: "tokens and tags differ in length", text: "tokens is not a list of strings",
        bad_tag: "a tag is not O or B-/I-/E-/S-<TYPE>",
    }


def test_the_same_sentence_tagged_two_ways_conflicts(clean: pd.DataFrame) -> None:
    table = clean.copy()
    first, second = rows_of(table, "train", 2)
    with_tokens(table, second, table.at[first, "tokens"])
    with_tags(table, second, ["O"] * len(table.at[first, "tags"]))
    check = run_audit(table, AuditConfig(), checks=[ConflictingLabelsCheck]).check("conflicting_labels")
    assert not check.success and check.failing_rows == [first, second]
    assert "/B-" in check.examples[0]["tagged"]  # the evidence shows each token's tag


def test_bio_violations_warn_in_exactly_their_sentences_and_block_when_common(clean: pd.DataFrame) -> None:
    table = clean.copy()
    planted = []
    for index in table.index[:60]:
        tags = list(table.at[index, "tags"])
        if entity_positions(tags, "PER"):
            tags[entity_positions(tags, "PER")[0]] = "I-PER"  # an I- that opens a span
            with_tags(table, index, tags)
            planted.append(index)
            if len(planted) == 3:
                break
    check = run_audit(table, AuditConfig(), checks=[TagSchemeViolationsCheck]).check("tag_scheme_violations")
    assert not check.success and check.severity == "warning" and check.failing_rows == planted
    example = check.examples[0]
    position = entity_positions(clean.at[planted[0], "tags"], "PER")[0]
    assert (example["row"], example["position"], example["tag"], example["expected"]) == (
        planted[0], position, "I-PER", "B-PER")
    assert f"{example['token']}/I-PER" in example["tagged"] and check.observed["scheme"] == "BIO"
    assert [suspect["likely_label"] for suspect in check.suspects] == [clean.at[row, "label"] for row in planted]
    for index in table.index[:100]:  # 5 % of the sentences: the file reads as another scheme
        tags = table.at[index, "tags"]
        with_tags(table, index, [f"I-{tag[2:]}" if tag.startswith("B-") else tag for tag in tags])
    check = run_audit(table, AuditConfig(), checks=[TagSchemeViolationsCheck]).check("tag_scheme_violations")
    assert check.severity == "error" and check.failing_rows == list(range(100))


def test_bioes_is_detected_and_unclosed_or_unopened_spans_are_found(clean: pd.DataFrame) -> None:
    table = clean.copy()
    for index in table.index:
        with_tags(table, index, to_bioes(table.at[index, "tags"]))
    check = run_audit(table, AuditConfig(), checks=[TagSchemeViolationsCheck]).check("tag_scheme_violations")
    assert check.success and check.observed["scheme"] == "BIOES"
    loc = next(index for index in table.index if "S-LOC" in table.at[index, "tags"])
    per = next(index for index in table.index if index > loc and "E-PER" in table.at[index, "tags"])
    tags = list(table.at[loc, "tags"])
    tags[tags.index("S-LOC")] = "B-LOC"  # a span never closed
    with_tags(table, loc, tags)
    tags = list(table.at[per, "tags"])
    tags[tags.index("E-PER")] = "I-PER"
    with_tags(table, per, tags)
    check = run_audit(table, AuditConfig(), checks=[TagSchemeViolationsCheck]).check("tag_scheme_violations")
    assert not check.success and check.severity == "warning" and check.failing_rows == [loc, per]
    assert [(example["tag"], example["expected"]) for example in check.examples] == [
        ("B-LOC", "S-LOC"), ("I-PER", "E-PER")]


def test_val_and_test_mentions_read_in_train_warn_with_the_commonest_as_evidence(clean: pd.DataFrame) -> None:
    check = run_audit(clean, AuditConfig(), checks=[EntitiesSeenInTrainCheck]).check("test_entities_seen_in_train")
    assert check.success and check.observed["unseen_fraction"] > 0.5
    table = clean.copy()
    train_names = {entity_type: commonest_mention(table[table["split"] == "train"], entity_type).iloc[0]
                   for entity_type in CUES}
    evaluation = table.index[table["split"] != "train"]
    for index in evaluation:  # every val/test mention becomes its type's commonest train mention
        tokens, tags = list(table.at[index, "tokens"]), table.at[index, "tags"]
        for entity_type, record in train_names.items():
            for at in entity_positions(tags, entity_type):
                name = table.at[record["index"], "tokens"]
                start = next(i for i, tag in enumerate(table.at[record["index"], "tags"]) if tag == f"B-{entity_type}")
                length = len(span_tags(entity_type, 2 if entity_type != "LOC" else 1, "BIO"))
                tokens[at : at + length] = name[start : start + length]
        with_tokens(table, index, tokens)
    check = run_audit(table, AuditConfig(), checks=[EntitiesSeenInTrainCheck]).check("test_entities_seen_in_train")
    assert not check.success and check.severity == "warning"
    assert check.failing_rows == evaluation.tolist() and check.observed["unseen_fraction"] == 0
    assert check.headline.startswith(f"0 % of the {check.observed['evaluation_mentions']} test/val entity mentions")
    top = check.examples[0]
    assert (top["mention"], top["type"]) == (train_names["PER"]["text"], "PER")  # PER: the commonest type
    assert top["val_test_mentions"] == check.observed["mentions_by_type"]["PER"]
    assert top["train_mentions"] == len(commonest_mention(clean[clean["split"] == "train"], "PER"))


def test_a_span_tagged_another_type_or_left_out_is_flagged_and_a_mostly_outside_word_is_not(
    clean: pd.DataFrame,
) -> None:
    check = run_audit(clean, AuditConfig(), checks=[InconsistentSpanTagsCheck]).check("inconsistent_span_tags")
    assert check.success and check.observed["inconsistent_spans"] == 0
    table = clean.copy()
    place, person = commonest_mention(table, "LOC"), commonest_mention(table, "PER")
    as_org, left_out = int(place["index"].iloc[0]), int(person["index"].iloc[0])
    tags = list(table.at[as_org, "tags"])
    at = [i for i, token in enumerate(table.at[as_org, "tokens"]) if token.lower() == place["text"].iloc[0]][0]
    tags[at] = "B-ORG"
    with_tags(table, as_org, tags)
    tags = list(table.at[left_out, "tags"])
    at = entity_positions(tags, "PER")[0]  # the sentence's first PER mention is the commonest one's
    assert " ".join(table.at[left_out, "tokens"][at : at + 2]).lower() == person["text"].iloc[0]
    tags[at : at + 2] = ["O", "O"]
    with_tags(table, left_out, tags)
    filler = next(index for index in table.index
                  if index not in (as_org, left_out) and table.at[index, "tags"][0] == "O")
    with_tags(table, filler, ["B-LOC", *table.at[filler, "tags"][1:]])  # a common word as a place, once
    check = run_audit(table, AuditConfig(), checks=[InconsistentSpanTagsCheck]).check("inconsistent_span_tags")
    assert not check.success and check.severity == "warning"
    assert check.failing_rows == sorted([as_org, left_out])
    assert check.observed["mostly_outside_spans"] == 1
    assert check.observed["mostly_outside"][0]["span"] == table.at[filler, "tokens"][0].lower()
    evidence = {example["span"]: example for example in check.examples}
    assert evidence[place["text"].iloc[0]]["taggings"] == {"LOC": len(place) - 1, "ORG": 1}
    assert evidence[place["text"].iloc[0]]["likely"] == "LOC"
    assert evidence[person["text"].iloc[0]]["taggings"] == {"PER": len(person) - 1, "O": 1}
    assert evidence[person["text"].iloc[0]]["flagged_rows"] == [left_out]
    likely = {suspect["row"]: suspect["likely_label"] for suspect in check.suspects}
    assert likely == {row: clean.at[row, "label"] for row in (as_org, left_out)}  # retagged as the span mostly is


def test_entity_types_too_rare_in_train_block_and_a_skewed_type_warns(clean: pd.DataFrame) -> None:
    def only_first_org_mentions(keep_train: int, keep_elsewhere: int) -> pd.DataFrame:
        """The table with every ORG mention but the first few per split (train, elsewhere) tagged O."""
        table, kept = clean.copy(), {"train": 0, "other": 0}
        for index in table.index:
            split = "train" if table.at[index, "split"] == "train" else "other"
            tags = list(table.at[index, "tags"])
            for at in entity_positions(tags, "ORG"):
                kept[split] += 1
                if kept[split] > (keep_train if split == "train" else keep_elsewhere):
                    tags[at : at + 2] = ["O", "O"]
            with_tags(table, index, tags)
        return table

    def judged(table: pd.DataFrame) -> object:
        return run_audit(table, AuditConfig(), checks=[EntityTypeImbalanceCheck]).check("entity_type_imbalance")

    check = judged(only_first_org_mentions(MIN_TRAIN_MENTIONS * 5, 30))
    assert not check.success and check.severity == "warning" and check.observed["ratio"] > 10
    assert [example["type"] for example in check.examples] == ["ORG"]
    check = judged(only_first_org_mentions(MIN_TRAIN_MENTIONS - 1, 30))
    assert check.severity == "error" and check.observed["too_few_in_train"] == ["ORG"]
    check = judged(only_first_org_mentions(0, 30))  # only val/test hold the type
    assert check.severity == "error" and check.examples[0]["train_mentions"] == 0
    assert all(clean.at[row, "split"] != "train" for row in check.examples[0]["rows"])


def test_tokens_tagged_against_their_evidence_are_flagged_only_in_their_sentences(clean: pd.DataFrame) -> None:
    table = clean.copy()
    planted = [index for index in table.index if table.at[index, "split"] == "train"
               and entity_positions(table.at[index, "tags"], "LOC")][:40]
    for index in planted:
        tags = list(table.at[index, "tags"])
        tags[entity_positions(tags, "LOC")[0]] = "B-PER"  # a place tagged as a one-token person
        with_tags(table, index, tags)
    config = AuditConfig(label_noise_warn_fraction=0.001)
    check = run_audit(table, config, checks=[TokenLabelNoiseCheck]).check("token_label_noise")
    assert not check.success and check.severity == "warning"
    # cleanlab flags as many tokens as it estimates are wrong, and its estimate is cautious: the planted tags
    # whose place the baseline is less sure of than of the average place stay below its threshold.
    assert set(check.failing_rows) <= set(planted) and len(check.failing_rows) >= 0.6 * len(planted)
    assert check.observed["flagged_tokens"] == len(check.failing_rows)
    assert {suspect["row"]: suspect["likely_label"] for suspect in check.suspects} == {
        row: clean.at[row, "label"] for row in check.failing_rows}  # the likely tag is the one before planting
    assert "-> B-LOC" in check.examples[0]["flagged_tokens"][0]
    config = AuditConfig(label_noise_warn_fraction=0.0005, max_label_noise_fraction=0.001)
    assert run_audit(table, config, checks=[TokenLabelNoiseCheck]).check("token_label_noise").severity == "error"


def test_token_noise_judges_a_sample_of_whole_sentences_on_large_data_and_says_so(clean: pd.DataFrame) -> None:
    table = clean.head(400)
    check = run_audit(table, AuditConfig(noise_max_rows=100), checks=[TokenLabelNoiseCheck]).check("token_label_noise")
    assert check.observed["sampled"] is True and "random sample of 100 of 400 sentences" in check.observed["note"]
    lengths = table["tokens"].map(len)
    assert 100 * lengths.min() <= check.observed["judged_tokens"] <= 100 * lengths.max()  # whole sentences
