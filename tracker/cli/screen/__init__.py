"""How the commands' answers look on a terminal: rich tables (render, tco_table, history_table)
and the on-screen collection with its progress bars (collecting). The answers themselves come
from the work below (`tracker.questions`, `tracker.collecting`)."""
