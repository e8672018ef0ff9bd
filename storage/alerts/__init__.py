"""The alerts' part of the store: the rules' measures (`measures`), the set-based evaluation
and per-subject state (`state`) and the event log with its delivery bookkeeping (`log`).

The `alerts` package decides what a rule means and what to send; every statement it needs
against the store is here, behind named functions taking plain values.
"""
