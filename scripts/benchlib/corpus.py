"""A deterministic corpus of Markdown context documents and the queries run against it.

The same seed gives byte-identical documents and queries on every machine,
so runs are comparable. Words follow a Zipf-like distribution over a few
thousand terms (common words, domain words, and generated product and
service names), so some queries match most documents and some match a few:
the search has real ranking work to do.
"""

from __future__ import annotations

import random
from pathlib import Path

import attrs

__all__ = ["Corpus", "Document", "make_corpus", "write_corpus"]

SEED = 20261123


def _words(text: str) -> list[str]:
    return text.split()


_COMMON = _words(
    """
the a of to and in is for on that with as by this be are it from at or an we
you they should must can will when if then after before each every not all any
more most only also into over under between during through about
"""
)

_DOMAIN = _words(
    """
deploy deployment rollback release canary pipeline build artifact container
image registry cluster node pod namespace ingress egress gateway proxy cache
database replica primary failover backup restore snapshot migration schema
index query latency throughput timeout retry backoff circuit breaker queue
worker scheduler cron job batch stream partition shard consumer producer topic
offset lag alert alarm pager oncall incident outage postmortem runbook
escalation severity triage mitigation root cause dashboard metric trace log
span sampling budget quota limit throttle certificate rotation secret vault
token credential password account permission role policy audit compliance
encryption tls handshake dns resolver firewall subnet vpc peering load
balancer health probe readiness liveness memory cpu disk volume filesystem
inode kernel upgrade patch version dependency lockfile vulnerability scan
customer invoice billing refund chargeback subscription plan trial upgrade
downgrade churn renewal contract procurement vendor onboarding offboarding
laptop badge access review approval request ticket sla response resolution
handover shift rotation holiday weekend escalate notify stakeholder status
page announcement changelog feature flag experiment rollout cohort metric
retention activation funnel signup login session cookie browser mobile android
ios push notification email webhook integration api endpoint pagination filter
search ranking relevance snippet document library skill prompt agent workspace
group connector approval destructive readonly export import csv parquet
warehouse etl transform dbt airflow spark notebook model training inference
gpu embedding vector evaluation benchmark regression flaky test coverage lint
format review merge branch commit tag monorepo
"""
)

_SYLLABLES = _words(
    """
ka ren to mi sha lo vex dri an pel tor qui zen bar co lum nix sal ver tan fro
gal hex ori pax rud sen tul wyn yar zor bel cas dun eld fen gor hal
"""
)

_SECTIONS = [
    "Overview",
    "When to use this",
    "Prerequisites",
    "Steps",
    "Verification",
    "Rollback",
    "Escalation",
    "Known issues",
    "Background",
    "References",
]

_KINDS = ["Runbook", "Policy", "Guide", "Postmortem", "Playbook", "FAQ", "Design note", "Checklist"]


@attrs.frozen
class Document:
    slug: str
    title: str
    body: str


@attrs.frozen
class Corpus:
    seed: int
    documents: tuple[Document, ...]
    queries: tuple[str, ...]

    @property
    def total_bytes(self) -> int:
        return sum(len(doc.body.encode()) for doc in self.documents)


def _names(rng: random.Random, count: int) -> list[str]:
    names: set[str] = set()
    while len(names) < count:
        names.add("".join(rng.choice(_SYLLABLES) for _ in range(rng.randint(2, 3))))
    return sorted(names)


class _Words:
    """Draws words with Zipf-like weights: a few very common, a long tail of rare ones."""

    def __init__(self, rng: random.Random, vocabulary: list[str]) -> None:
        self._rng = rng
        self.vocabulary = vocabulary
        self._weights = [1.0 / (rank + 1) ** 0.9 for rank in range(len(vocabulary))]

    def take(self, count: int) -> list[str]:
        return self._rng.choices(self.vocabulary, weights=self._weights, k=count)


def _sentence(rng: random.Random, words: _Words) -> str:
    picked = words.take(rng.randint(8, 18))
    for i in range(0, len(picked), rng.randint(3, 5)):
        picked[i] = rng.choice(_COMMON)
    text = " ".join(picked)
    return text[0].upper() + text[1:] + "."


def _document(rng: random.Random, words: _Words, names: list[str], n: int) -> Document:
    topic = words.take(2)
    service = rng.choice(names)
    kind = rng.choice(_KINDS)
    title = f"{kind}: {service} {topic[0]} {topic[1]}"
    lines = [f"# {title}", ""]
    target = rng.randint(2000, 6000)
    size = 0
    sections = rng.sample(_SECTIONS, k=rng.randint(3, 6))
    while size < target:
        for heading in sections:
            lines += [f"## {heading}", ""]
            for _ in range(rng.randint(1, 3)):
                paragraph = " ".join(_sentence(rng, words) for _ in range(rng.randint(2, 5)))
                lines += [paragraph, ""]
            if rng.random() < 0.4:
                lines += [f"- {_sentence(rng, words)}" for _ in range(rng.randint(2, 5))]
                lines.append("")
            if rng.random() < 0.15:
                command = f"{service} {' '.join(words.take(3))} --{rng.choice(names)}"
                lines += ["```sh", command, "```", ""]
            size = sum(len(line) + 1 for line in lines)
            if size >= target:
                break
    return Document(slug=f"doc-{n:03d}-{service}", title=title, body="\n".join(lines))


def make_corpus(documents: int = 200, queries: int = 48, seed: int = SEED) -> Corpus:
    """``documents`` Markdown documents of 2-6 KB and ``queries`` search queries, from ``seed``.

    Queries are plain words (no FTS syntax): a quarter single common domain
    words, a quarter pairs, a quarter rare generated names (few matches), a
    quarter three-word mixes, in a fixed shuffled order.
    """
    rng = random.Random(seed)  # noqa: S311 - a reproducible corpus, not a secret
    names = _names(rng, 1500)
    vocabulary = list(_DOMAIN)
    rng.shuffle(vocabulary)
    vocabulary += names
    words = _Words(rng, vocabulary)
    docs = tuple(_document(rng, words, names, n) for n in range(documents))
    common = vocabulary[:60]
    query_list: list[str] = []
    for n in range(queries):
        kind = n % 4
        if kind == 0:
            query_list.append(rng.choice(common))
        elif kind == 1:
            query_list.append(" ".join(rng.sample(common, 2)))
        elif kind == 2:
            query_list.append(rng.choice(names))
        else:
            query_list.append(" ".join([*rng.sample(common, 2), rng.choice(vocabulary[:400])]))
    rng.shuffle(query_list)
    return Corpus(seed=seed, documents=docs, queries=tuple(query_list))


def write_corpus(corpus: Corpus, directory: Path) -> list[Path]:
    """Write each document as ``<slug>.md`` in ``directory``; the paths, in corpus order."""
    directory.mkdir(parents=True, exist_ok=True)
    paths = []
    for doc in corpus.documents:
        path = directory / f"{doc.slug}.md"
        path.write_text(doc.body + "\n", encoding="utf-8")
        paths.append(path)
    return paths
