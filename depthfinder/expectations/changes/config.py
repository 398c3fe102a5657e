"""When a change in the data is worth a retrain, and when it should stop the night instead."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class ChangesConfig(BaseModel):
    """Thresholds of the comparison with the champion's table, and the policy they feed."""

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    skip_minor: bool | None = Field(
        None,
        description="Skip the retrain when no change reaches a retrain threshold; null: on in the nightly "
        "deployment, off in `depthfinder run` (which retrains on any change).",
        json_schema_extra={"flag": "--skip-minor"},
    )
    retrain_added_fraction: float = Field(
        0.05, ge=0, le=1, description="Rows added since the champion, as a share of its table, that retrain."
    )
    retrain_label_psi: float = Field(
        0.1, ge=0,
        description="Population stability index of the label mix (champion's rows vs rows added) that retrains, "
        "when the chi-square test also finds the shift (p below label_shift_p).",
    )
    label_shift_p: float = Field(0.01, gt=0, lt=1, description="p-value below which the label mix has shifted.")
    retrain_decay: float = Field(
        0.05, ge=0, le=1,
        description="How far the champion's metric on the rows added may fall below its test metric before the "
        "drop retrains.",
    )
    decay_min_rows: int = Field(
        30, strict=True, ge=1, description="Rows added the champion must be scored on before decay is judged."
    )
    warn_drift_auc: float = Field(
        0.75, ge=0.5, le=1,
        description="Out-of-fold AUC of a classifier telling the champion's rows from the rows added that is "
        "reported as drift.",
    )
    stop_drift_auc: float = Field(
        0.95, ge=0.5, le=1,
        description="Drift AUC at which tonight's rows look like another task: the night stops (exit 1).",
    )
    foreign_rate: float = Field(
        0.01, gt=0, lt=0.5,
        description="A row added counts as foreign, unlike anything the champion learned, when the drift classifier "
        "scores it above all but this share of the champion's own rows: the share of rows of the same task it "
        "flags by chance (subtracted from the count).",
    )
    stop_foreign_fraction: float = Field(
        0.05, ge=0, le=1,
        description="Foreign rows added, as a share of the champion's table, that stop the night: a block of "
        "another task, found row by row even when in-domain rows dilute it.",
    )
    stop_relabelled_fraction: float = Field(
        0.05, ge=0, le=1,
        description="Rows relabelled (same text, new label), as a share of the champion's table, that stop the "
        "night.",
    )
    warn_length_shift: float = Field(
        0.2, gt=0, le=1,
        description="Kolmogorov-Smirnov distance between the word counts of the champion's rows and the rows "
        "added that is reported.",
    )
    max_rows: int = Field(
        5_000, strict=True, ge=100,
        description="Rows per side the drift classifier and the champion's scoring use at most (a random sample).",
    )
    examples: int = Field(5, strict=True, ge=0, le=100, description="Example rows kept as evidence per measure.")

    def thresholds(self) -> dict[str, str]:
        """Each measure's thresholds as the policy reads them, by measure name (for the what-changed table)."""
        return {
            "rows_added": f"retrain above {self.retrain_added_fraction:.0%} of the champion's table",
            "relabelled_rows": f"retrain on any; stop above {self.stop_relabelled_fraction:.0%}",
            "champion_test_rows": "reported",
            "label_shift": f"retrain: PSI above {self.retrain_label_psi:g} and p below {self.label_shift_p:g}",
            "new_or_vanished_classes": "retrain on any",
            "text_drift": f"report AUC {self.warn_drift_auc:g}; stop {self.stop_drift_auc:g}",
            "foreign_rows": f"stop above {self.stop_foreign_fraction:.0%} of the champion's table",
            "length_shift": f"report KS {self.warn_length_shift:g}",
            "champion_decay": f"retrain: a drop above {self.retrain_decay:g} (at least {self.decay_min_rows} rows)",
        }
