/**
 * The fixed id of the "pSEO usage" Insights dashboard that start-up creates (schema/usage-dashboard.ts), so that
 * the app module can link to it.
 */
export const USAGE_DASHBOARD_ID = '6f1d3a2e-6c1b-4a3e-9a57-0b9e6c0d5a01';
