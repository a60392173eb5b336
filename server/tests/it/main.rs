//! The server's integration tests, as one binary: each module is one
//! concern (named as the file it is in), sharing `common`'s helpers. One
//! binary links the whole server once instead of once per file.

// The macros in `common` (on_both_databases!) are used by the modules below it.
#[macro_use]
mod common;

mod access_keys;
mod account_mail;
mod accounts;
mod alerts;
mod architecture;
mod asset_pages;
mod assets;
mod audit_log;
mod changes;
mod clean_stop;
mod cli;
mod cli_remote;
mod cluster_contract;
mod compare;
mod console_builds;
mod console_in_cluster;
mod console_metrics;
mod environments;
mod experiment_pages;
mod experiment_store;
mod experiments;
mod fuzz_corpus;
mod http;
mod job_counts;
mod job_page;
mod job_record;
mod kube_backend;
mod kube_inputs;
mod kube_metric_files;
mod kube_metrics_api;
mod kube_serving;
mod kube_stalls;
mod leases;
mod lineage;
mod local_restart;
mod local_runs;
mod local_scheduling;
mod mail_contract;
mod members;
mod metric_envelope;
mod metric_files_shipped;
mod metric_logs_handmade;
mod metric_logs_python_damage;
mod metric_logs_python_writers;
mod metrics;
mod metrics_api;
mod mlflow;
mod model_aliases;
mod notebook_access;
mod notebook_contract;
mod notebook_environment;
mod notebook_runs;
mod notebook_shares;
mod notebook_templates;
mod notebook_versions;
mod notebooks;
mod notifications;
mod openapi_constraints;
mod pipelines;
mod prometheus;
mod real_node;
mod replicas;
mod rest;
mod role_matrix;
mod schedules;
mod serving;
mod serving_release;
mod stalled_jobs;
mod templates;
mod usage;
