//! The use cases that combine several ports, on the server only: every way
//! in (server functions for the pages, the REST API for the CLI and SDK)
//! calls the same function, so a rule such as the quota check holds for all
//! of them. A use case that needs one port only is that port's method.

pub mod admission;
pub mod compare;
pub mod environments;
pub mod experiments;
pub mod job_detail;
pub mod jobs;
pub mod lineage;
pub mod model_versions;
pub mod notebook_runs;
pub mod notebooks;
pub mod notifications;
pub mod pipelines;
pub mod schedules;
pub mod scoring;
pub mod serving;
pub mod templates;

pub use jobs::submit_within_quota;
pub use notebooks::{create_notebook_within_quota, start_notebook_within_quota};
pub use serving::{launch_within_quota, release_within_quota, scale_within_quota};
pub use templates::{run_template, save_template};
