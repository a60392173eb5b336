//! Plain serde types shared by browser and server. Database rows and cluster
//! objects are mapped into these at the edge, in `server/`.

pub mod access_key;
pub mod account;
pub mod asset_views;
pub mod assets;
pub mod audit;
pub mod board;
pub mod capacity;
pub mod compare;
pub mod csv;
pub mod environments;
pub mod experiments;
pub mod form_text;
pub mod inputs;
pub mod job_detail;
pub mod job_form;
pub mod job_origin;
pub mod job_query;
pub mod jobs;
pub mod lineage;
pub mod local_runs;
pub mod members;
pub mod metrics;
pub mod model_aliases;
pub mod names;
pub mod notebooks;
pub mod pipeline_form;
pub mod pipelines;
pub mod quantity;
pub mod quota;
pub mod resources;
pub mod serving;
pub mod serving_form;
pub mod serving_tracks;
pub mod template_form;
pub mod templates;
pub mod theme;
pub mod time;
pub mod url;
pub mod workload;

pub use access_key::*;
pub use account::*;
pub use asset_views::*;
pub use assets::*;
pub use audit::*;
pub use board::{BoardJob, BoardView, XAxis};
pub use capacity::*;
pub use environments::*;
pub use experiments::*;
pub use form_text::{join_command, parse_env_lines, split_command};
pub use inputs::{job_inputs, notebook_dataset, Input};
pub use job_detail::*;
pub use job_form::*;
pub use job_origin::*;
pub use job_query::*;
pub use jobs::*;
pub use lineage::*;
pub use local_runs::*;
pub use members::*;
pub use metrics::*;
pub use model_aliases::*;
pub use notebooks::*;
pub use pipelines::{
    next_steps, NodeState, NodeStatus, NodeTemplate, PipelineNode, PipelineRun, PipelineSpec,
    PipelineSubmit, RunStatus, Step,
};
pub use quota::*;
pub use resources::*;
pub use serving::*;
pub use serving_form::*;
pub use serving_tracks::*;
pub use template_form::*;
pub use templates::*;
pub use workload::*;
