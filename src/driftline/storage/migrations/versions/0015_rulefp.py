"""Rule fingerprints on trigger states: `trigger_states.fingerprint`, the Rule.fingerprint of the trigger definition
that judged the stored state (triggers/model.py). A trigger edited in the config kept its stored reading, which
`driftline alerts` showed next to the new line as if the new rule had judged it (user tryout: "fpr > 0.12 · variant
control … ok 0.104 n=6,938", the whole model's numbers under the old line). Rows stored before get NULL: their
definition is unknown, and the next evaluation records it.

Idempotent (the column may already be there, as 0002 allows for its own). The downgrade drops the column.

Revision ID: 0015_rulefp
Revises: 0003
"""
import sqlalchemy as sa
from alembic import op

revision = "0015_rulefp"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    if any(c["name"] == "fingerprint" for c in sa.inspect(op.get_bind()).get_columns("trigger_states")):
        return
    with op.batch_alter_table("trigger_states") as batch:
        batch.add_column(sa.Column("fingerprint", sa.String(32), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("trigger_states") as batch:
        batch.drop_column("fingerprint")
