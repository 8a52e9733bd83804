/** The compiler version recorded in tuning records and bundles. Keep in step with package.json. */
export const VERSION = '0.1.0';
