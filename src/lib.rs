//! tilewise
