"""Held runs: an answer that would rewrite a provider's history is not believed at once.

Inside the write's transaction, with the answer staged beside the provider's open offers
(`storage.merge`), an answer is suspect when, with at least `MIN_OPEN` open offers of the source
it covers, it would withdraw more than `max_withdrawn` of them, or move more than `max_jumped`
of those it continues by more than `jump_factor`. A suspect answer changes nothing; its run is
stored as `held` with the rule and the counts. The next answer decides: suspect again by the
same rule against the same open offers, the two agree and it is applied (docs/trust.md).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

# Fewer open offers than this say too little for a share to mean anything.
MIN_OPEN = 8

# The open offers the answer looked for: the regions it covered (an offer of no region is
# looked for by every answer) and its grain of spot prices (another source's are not), as
# `storage.merge` scopes its withdrawals; read from what the merge staged (`open_now` carries
# each open offer's scope, `paths` the answer's newest price per offer), so the check costs no
# read of the history of its own.
_IN_SCOPE = """($all_regions OR o.region IS NULL OR list_contains($regions, o.region))
  AND NOT coalesce(o.price_kind = 'spot' AND (o.zone IS NOT NULL) <> $spot_zoned, false)"""

# Of those: how many, how many the answer continues, and how many it moves by more than the
# factor.
_NEWEST = "CAST(n.newest_price AS DOUBLE) / CAST(o.price_per_hour AS DOUBLE)"
_COUNTS = f"""
SELECT count(*), count(n.newest_price),
       count(*) FILTER (WHERE {_NEWEST} > $factor OR {_NEWEST} < 1 / $factor)
FROM open_now o LEFT JOIN paths n ON n.offer_key = o.offer_key
WHERE {_IN_SCOPE}
"""

# How many of them it withdraws: an open offer the answer does not price, unless its type could
# not be read, or it moved: a type sold out everywhere moves between an offer of no region and
# offers per region (docs/sql.md), so an offer of no region, or one of a type and kind the
# answer prices in no region, has a successor. Counted only when the answer leaves some open
# offer unpriced (the merge's tally says): usually none.
_WITHDRAWN = f"""
SELECT count(*)
FROM open_now o ANTI JOIN paths n ON n.offer_key = o.offer_key
WHERE {_IN_SCOPE} AND o.region IS NOT NULL AND NOT list_contains($keep_open, o.instance_type)
  AND NOT EXISTS (SELECT 1 FROM batch b
                  WHERE b.region IS NULL AND b.instance_type = o.instance_type
                    AND b.price_kind = o.price_kind)
"""

# Which open offers the answer was compared with: the same intervals give the same digest.
_FINGERPRINT = f"""
SELECT md5(coalesce(string_agg(offer_key || '@' || CAST(valid_from AS VARCHAR), ','
                               ORDER BY offer_key, valid_from), ''))
FROM open_now o WHERE {_IN_SCOPE}
"""

# The provider's last answer that was judged (ok or held), and what held it if it was.
_LAST_JUDGED = """
SELECT r.status, h.rule, h.fingerprint
FROM runs r LEFT JOIN held_runs h USING (run_id)
WHERE r.provider = $provider AND r.status IN ('ok', 'held')
ORDER BY r.run_id DESC LIMIT 1
"""


@dataclass(frozen=True)
class Suspicion:
    """When an answer is suspect (`[collect]`, `[providers.<name>]`); `accept` applies a
    suspect answer at once (`collect --accept-suspect`)."""

    max_withdrawn: float = 0.25
    max_jumped: float = 0.5
    jump_factor: float = 3.0
    accept: bool = False


@dataclass(frozen=True)
class Verdict:
    """Why an answer is suspect: its rule, the counts in words, the open offers it was
    compared with (their number and digest)."""

    rule: str  # withdrawn | jumped
    text: str
    open_offers: int
    fingerprint: str


class Judge:
    """`storage.merge`'s judge for one provider's answer. After the merge: `held` (nothing
    changed), or `agreed` (applied, agreeing with the held answer before it), or `accepted`."""

    def __init__(self, provider: str, suspicion: Suspicion) -> None:
        self.provider = provider
        self.suspicion = suspicion
        self.held: Verdict | None = None
        self.agreed: Verdict | None = None
        self.accepted: Verdict | None = None

    def __call__(self, con: Any, scope: dict[str, Any]) -> bool:
        verdict = self._verdict(con, scope)
        if verdict is None:
            return False
        if self.suspicion.accept:
            self.accepted = verdict
            return False
        last = con.execute(_LAST_JUDGED, {"provider": self.provider}).fetchone()
        if last is not None and tuple(last) == ("held", verdict.rule, verdict.fingerprint):
            self.agreed = verdict
            return False
        self.held = verdict
        return True

    def _verdict(self, con: Any, scope: dict[str, Any]) -> Verdict | None:
        s = self.suspicion
        if int(con.execute("SELECT count(*) FROM open_now").fetchall()[0][0]) < MIN_OPEN:
            return None  # fewer in all than the share needs (a first answer: none)
        where = {k: scope[k] for k in ("all_regions", "regions", "spot_zoned")}
        counts = con.execute(_COUNTS, {**where, "factor": s.jump_factor}).fetchone()
        open_offers, continuing, jumped = (int(n) for n in counts)
        if open_offers < MIN_OPEN:
            return None
        withdrawn = 0
        if scope["unnamed"]:
            withdrawn = int(
                con.execute(_WITHDRAWN, {**where, "keep_open": scope["keep_open"]}).fetchone()[0]
            )
        if withdrawn / open_offers > s.max_withdrawn:
            rule = "withdrawn"
            text = (
                f"would withdraw {withdrawn} of {open_offers} open offers"
                f" ({_share(withdrawn, open_offers)} > {_pct(s.max_withdrawn)})"
            )
        elif continuing and jumped / continuing > s.max_jumped:
            rule = "jumped"
            text = (
                f"would move {jumped} of {continuing} continuing offers by more than"
                f" {s.jump_factor:g}x ({_share(jumped, continuing)} > {_pct(s.max_jumped)})"
            )
        else:
            return None
        digest = str(con.execute(_FINGERPRINT, where).fetchone()[0])
        return Verdict(rule, text, open_offers, digest)


def record_held(con: Any, run_id: int, verdict: Verdict) -> None:
    """What the next answer is compared with, beside the held run's row."""
    con.execute(
        "INSERT INTO held_runs VALUES (?, ?, ?, ?)",
        [run_id, verdict.rule, verdict.open_offers, verdict.fingerprint],
    )


def _share(part: int, whole: int) -> str:
    return _pct(part / whole)


def _pct(share: float) -> str:
    return f"{share:.0%}"
