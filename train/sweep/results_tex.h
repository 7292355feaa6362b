// rpb/train/sweep/results_tex.h: the sweep's results.tex, a LaTeX table per task for a paper.
#pragma once

#include <string>

#include "train/sweep/results_json.h"

namespace rpb {

/// `text` as LaTeX text that prints it verbatim: \ _ % & # $ { } ~ ^ become \textbackslash{}, \_, \%, \&, \#, \$,
/// \{, \}, \textasciitilde{}, \textasciicircum{}; < > | (which print other glyphs in LaTeX's default font encoding)
/// become \textless{}, \textgreater{}, \textbar{}; @ becomes {@}, so that it can never join a command name (in a
/// file \input under \makeatletter, @ is a letter); a control character becomes a space. Other characters (UTF-8
/// included) are kept.
std::string latex_escape(const std::string& text);

/// results.tex of the sweep `r`: a comment naming the sweep and the packages it needs (booktabs, graphicx), then one
/// table environment per task, in the order of r.rows (each row of the tabular ends with \\ and a newline, left out
/// here):
///
///   \begin{table}[htbp]
///     \centering
///     \small
///     \caption{markov (trained at 64 tokens): perplexity against evaluation length; mean $\pm$ std over 3 seeds. ...}
///     \label{tab:<sweep>-<task>}
///     \resizebox{\ifdim\width>\linewidth\linewidth\else\width\fi}{!}{%
///     \begin{tabular}{lrrrr}
///       \toprule
///        & & \multicolumn{3}{c}{Perplexity at evaluation length (tokens)}
///       \cmidrule(l){3-5}
///       Method & Position params & 64 & 128 & 256
///       \midrule
///       T5 bias, max\_distance 64 & 128 & $\mathbf{8.39 \pm 0.01}$ & $8.38 \pm 0.01$ & n/a
///       \bottomrule
///     \end{tabular}}
///   \end{table}
///
/// Each table fits a one-column page: \small, and scaled down to \linewidth when wider (tests/tools/latex_fits.py
/// compiles every committed sweep's with pdflatex). The caption begins with the task's label (task_label,
/// train/sweep/labels.h: [sweep] task_labels sets it) and its train length; the header names the measure with its
/// unit and the evaluation lengths' ("tokens"; "cells" for a grid side).
/// A row per method (its label, escape_label'd for LaTeX), a column per evaluation length (on a 2-D task, the grid
/// side). Cells are the mean $\pm$ the sample std over the seeds (SweepResultsRow::perplexity_mean and perplexity_std;
/// with one seed, the mean alone), as the terminal table prints them (2 decimals below 100, else 1); "n/a" where the
/// method cannot run. In each length column the best mean is bold ($\mathbf{...}$) only where it leads the second
/// best by more than the larger of the two's std over the seeds, and with one seed none is (no spread is known).
/// Label keys are made of letters, digits and '-' only (other characters of the sweep or task name become '-').
///
/// A task whose rows have text bytes (SweepResultsRow::has_bytes) gets a second table after it, of bits per byte
/// (bits_per_byte_mean and _std, 3 decimals, the lowest bold as above; \label{tab:<sweep>-<task>-bits-per-byte}). A
/// task whose rows have an accuracy (passkey) says "perplexity of the answer tokens" in its caption and gets an
/// accuracy table (\label{tab:<sweep>-<task>-accuracy}): a column Learned after Position params ("2/3": the seeds that
/// reached kLearnedAccuracy at the train length), the cells in percent with 1 decimal (accuracy_mean and _std: at the
/// train length over every seed, past it over the learned seeds), the highest bold as above, and "not learned" past
/// the train length for a method no seed of which learned the task (never a number, which would read as failing to
/// extrapolate).
std::string results_tex(const SweepResults& r);

}  // namespace rpb
