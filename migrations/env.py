"""Alembic environment: runs on the engine tpsdb hands over (or the URL in the config), batch mode for SQLite."""

from alembic import context
from sqlalchemy import create_engine
from sqlmodel import SQLModel

import tpsdb.models  # noqa: F401  (registers the tables on SQLModel.metadata)

config = context.config
target_metadata = SQLModel.metadata


def _run(connection) -> None:
    context.configure(
        connection=connection,
        target_metadata=target_metadata,
        render_as_batch=True,  # SQLite cannot ALTER most things; batch mode recreates the table
        compare_type=True,
        transactional_ddl=True,  # tpsdb runs DDL inside its transaction (see db.make_engine), SQLite included
    )
    with context.begin_transaction():  # inside tpsdb's own transaction: Alembic neither commits nor ends it
        context.run_migrations()


def run_migrations_online() -> None:
    # tpsdb hands over a connection already inside its transaction (tpsdb.db.init_database): the migration, the
    # checks before it and the seed after it commit together or not at all. The URL never has to be parsed.
    if (connection := config.attributes.get("connection")) is not None:
        _run(connection)
        return
    engine = config.attributes.get("engine") or create_engine(config.get_main_option("sqlalchemy.url"))
    with engine.begin() as connection:
        _run(connection)


def run_migrations_offline() -> None:
    context.configure(url=config.get_main_option("sqlalchemy.url"), target_metadata=target_metadata,
                      literal_binds=True, render_as_batch=True)
    with context.begin_transaction():
        context.run_migrations()


if context.is_offline_mode():
    run_migrations_offline()
else:
    run_migrations_online()
