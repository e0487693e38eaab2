"""Labels stay in the outcome rows: a stored prediction's row is written once, and its label in force is its
outcome row's when one exists (storage/join_rows.py, "A prediction row is written once" in the README).

The tables do not change and stores written before are already consistent under the rule, so the upgrade does
nothing to the data. The revision is recorded so that an older driftline refuses a store written under the rule
(SchemaTooNew) instead of reading its outcome-labelled predictions as unlabelled. The downgrade folds every outcome's
label into its predictions' rows, which is what an older driftline reads.

Revision ID: 0012_labelsapart
Revises: 0001
"""
from alembic import op

revision = "0012_labelsapart"
down_revision = "0001"
branch_labels = None
depends_on = None

FOLD_ALL = ("UPDATE predictions SET "
            "label = (SELECT o.label FROM outcomes o WHERE o.prediction_id = predictions.prediction_id), "
            "label_ts = (SELECT o.ts FROM outcomes o WHERE o.prediction_id = predictions.prediction_id), "
            "implicit = FALSE "
            "WHERE EXISTS (SELECT 1 FROM outcomes o WHERE o.prediction_id = predictions.prediction_id)")
"""Every prediction with an outcome row takes that row's label and time as its own (the label in force)."""


def upgrade() -> None:
    pass


def downgrade() -> None:
    op.execute(FOLD_ALL)
