"""Schema migrations, recorded in `schema_migrations` and applied in order, once each; then the
views (`storage.views`) recreated wherever their definitions changed.

The tables are internal and change here, with a new migration (in the module of the tables it
builds: `history`, `facts` or `alerting`), never by editing an applied one. The views are the
public SQL surface (docs/sql.md) and live in `storage.views` only: the migrations of older
releases created them too, and `migrate()` replaces those with the current definitions (a store
made by any release ends with the same views as a fresh one). `runner` applies them.
"""

from storage.migrations.runner import MIGRATIONS, migrate, migrate_uncommitted

__all__ = ["MIGRATIONS", "migrate", "migrate_uncommitted"]
