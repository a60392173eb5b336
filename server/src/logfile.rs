//! Pod logs on disk (being written by the helper).
