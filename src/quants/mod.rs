//! Element formats (being written)
