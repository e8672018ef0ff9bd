"""Alert rules evaluated over the stored price history, and their notifiers (Slack, email).

Empty until the alerts issue lands; the package exists so the four-package layout is fixed.
"""
