/* SPDX-License-Identifier: MIT */
/*
 * The playout's knobs (remolo_playout.h, PLAYOUT_CONFIG_FIELDS): the design
 * note's seed, the default the receiver runs, setting one by name, and the
 * rules a configuration must keep.
 */
#include <errno.h>
#include <stddef.h>
#include <string.h>

#include "remolo_playout.h"

void playout_config_seed(struct playout_config *cfg)
{
	cfg->creep_ppm = REMOLO_CREEP_PPM;
	cfg->gap_reset_us = REMOLO_GAP_RESET_US;
	cfg->step_reset_us = REMOLO_STEP_RESET_US;
	cfg->window = REMOLO_WINDOW;
	cfg->quantile_permille = REMOLO_QUANTILE_PERMILLE;
	cfg->delay_margin_us = REMOLO_DELAY_MARGIN_US;
	cfg->delay_min_us = REMOLO_DELAY_MIN_US;
	cfg->delay_max_us = REMOLO_DELAY_MAX_US;
	cfg->delay_start_us = REMOLO_DELAY_START_US;
	cfg->shrink_permille = REMOLO_SHRINK_PERMILLE;
	cfg->seg_min_us = REMOLO_SEG_MIN_US;
	cfg->seg_max_us = REMOLO_SEG_MAX_US;
	cfg->late_min_us = REMOLO_LATE_MIN_US;
	cfg->late_max_us = REMOLO_LATE_MAX_US;
	cfg->idle_us = REMOLO_IDLE_US;
	cfg->seg_end_at_slot = 0;
	cfg->frame_max_us = 0;
	cfg->rise_window_us = 0;
	cfg->slew_permille = 0;
	cfg->catchup_permille = 0;
	cfg->stall_weight = 0;
	cfg->choose_horizon_shift = REMOLO_CHOOSE_HORIZON_SHIFT;
	cfg->choose_hysteresis_permille = REMOLO_CHOOSE_HYSTERESIS_PERMILLE;
	cfg->recall_permille = 0;
	cfg->choose_floor = 0;
	cfg->keep_max_us = 0;
	cfg->lost_span_max_us = 0;
}

void playout_config_default(struct playout_config *cfg)
{
	playout_config_seed(cfg);
	cfg->frame_max_us = REMOLO_FRAME_MAX_US;
	cfg->rise_window_us = REMOLO_RISE_WINDOW_US;
	cfg->slew_permille = REMOLO_SLEW_PERMILLE;
	cfg->catchup_permille = REMOLO_CATCHUP_PERMILLE;
	cfg->delay_min_us = REMOLO_DEFAULT_DELAY_MIN_US;
	cfg->delay_start_us = REMOLO_DEFAULT_DELAY_START_US;
	cfg->delay_margin_us = REMOLO_DEFAULT_DELAY_MARGIN_US;
	cfg->keep_max_us = REMOLO_KEEP_MAX_US;
	cfg->lost_span_max_us = REMOLO_LOST_SPAN_MAX_US;
	cfg->recall_permille = REMOLO_RECALL_PERMILLE;
	/* The delay: the chooser's pick over the recent past, never below the
	 * lesser of the window's and the session's reading of the knee
	 * (docs/playout.md, "The floor under the chooser"). */
	cfg->stall_weight = REMOLO_STALL_WEIGHT;
	cfg->choose_floor = 1;
}

int playout_config_set(struct playout_config *cfg, const char *name, int64_t value)
{
	if (value < 0 || value > (int64_t)UINT32_MAX)
		return -ERANGE;
#define SET_ONE(field)                                  \
	if (strcmp(name, #field) == 0) {                \
		cfg->field = (uint32_t)value;           \
		return 0;                               \
	}
	PLAYOUT_CONFIG_FIELDS(SET_ONE)
#undef SET_ONE
	return -ENOENT;
}

const char *playout_config_field(uint32_t i)
{
	static const char *const names[] = {
#define NAME_ONE(field) #field,
		PLAYOUT_CONFIG_FIELDS(NAME_ONE)
#undef NAME_ONE
	};
	_Static_assert(sizeof(names) / sizeof(names[0]) == PLAYOUT_CONFIG_FIELD_COUNT, "one name per field");

	return i < PLAYOUT_CONFIG_FIELD_COUNT ? names[i] : NULL;
}

const char *playout_config_problem(const struct playout_config *cfg)
{
	const uint32_t tmax = PLAYOUT_CFG_TIME_MAX_US, smax = PLAYOUT_CFG_SEG_MAX_US;

	if (cfg->window == 0 || cfg->window > REMOLO_WINDOW_MAX)
		return "window must be 1...256";
	if (cfg->quantile_permille > 1000)
		return "quantile_permille must be at most 1000";
	if (cfg->shrink_permille > 1000)
		return "shrink_permille must be at most 1000";
	if (cfg->creep_ppm > 1000000)
		return "creep_ppm must be at most 1000000";
	if (cfg->delay_max_us > tmax || cfg->delay_margin_us > tmax)
		return "delay_max_us and delay_margin_us must be at most 60 s";
	if (cfg->delay_min_us > cfg->delay_start_us || cfg->delay_start_us > cfg->delay_max_us)
		return "delays must satisfy delay_min_us <= delay_start_us <= delay_max_us";
	if (cfg->seg_min_us > cfg->seg_max_us || cfg->seg_max_us > smax)
		return "segments must satisfy seg_min_us <= seg_max_us <= 1 s";
	if (cfg->late_min_us > cfg->late_max_us || cfg->late_max_us > smax)
		return "late replays must satisfy late_min_us <= late_max_us <= 1 s";
	if (cfg->frame_max_us > smax)
		return "frame_max_us must be at most 1 s";
	if (cfg->lost_span_max_us > smax)
		return "lost_span_max_us must be at most 1 s";
	if (cfg->seg_end_at_slot > 1)
		return "seg_end_at_slot must be 0 or 1";
	if (cfg->slew_permille > 1000 || cfg->catchup_permille > 1000)
		return "slew_permille and catchup_permille must be at most 1000";
	if (cfg->slew_permille && cfg->seg_end_at_slot)
		return "slew_permille and seg_end_at_slot cannot both be set";
	if (cfg->stall_weight > REMOLO_CHOOSER_WEIGHT_MAX)
		return "stall_weight must be at most 10000";
	if (cfg->choose_horizon_shift < 1 || cfg->choose_horizon_shift > REMOLO_CHOOSER_SHIFT_MAX)
		return "choose_horizon_shift must be 1...16";
	if (cfg->choose_hysteresis_permille > 1000)
		return "choose_hysteresis_permille must be at most 1000";
	if (cfg->recall_permille > 1000)
		return "recall_permille must be at most 1000";
	if (cfg->choose_floor > 1)
		return "choose_floor must be 0 or 1";
	if (cfg->choose_floor && (!cfg->stall_weight || !cfg->recall_permille))
		return "choose_floor needs stall_weight and recall_permille";
	if (cfg->keep_max_us > tmax)
		return "keep_max_us must be at most 60 s";
	if (cfg->rise_window_us > tmax || cfg->gap_reset_us > tmax || cfg->step_reset_us > tmax ||
	    cfg->idle_us > tmax)
		return "rise_window_us, gap_reset_us, step_reset_us and idle_us must be at most 60 s";
	return NULL;
}

int playout_config_check(const struct playout_config *cfg)
{
	return playout_config_problem(cfg) ? -EINVAL : 0;
}
