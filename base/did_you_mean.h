// "Did you mean": the candidate nearest a mistyped name, for the one-line errors of unknown
// flags and config keys.
#pragma once
#include <string>
#include <vector>

namespace tpb {

// Optimal string alignment distance (Levenshtein plus adjacent transpositions, each edit 1):
// "--bach" is 1 from "--batch", "--bacth" 1 from "--batch".
std::size_t edit_distance(const std::string& a, const std::string& b);

// The candidate nearest `word`, or "" when none is within max(2, word.size() / 3) edits (so
// a word unlike every candidate gets no suggestion). Ties go to the earlier candidate.
std::string nearest_name(const std::string& word, const std::vector<std::string>& candidates);

}  // namespace tpb
